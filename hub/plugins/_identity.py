"""Plugin identity: which distribution a plugin name (and so its component ids) belongs to.

A component id is ``<plugin name>.<component>``, so owning the name is owning the ids. The rules,
applied by :meth:`hub.plugins.PluginManager.load_entrypoints` before any code of a candidate is
imported:

* the core owns ``hub`` (refused elsewhere by the manager) and the first-party distributions own
  their names (:data:`FIRST_PARTY`), installed or not: installing some package can never
  replace ``mscclang.ir`` with its own;
* any other name belongs to the first distribution that claims it, in load order: the core,
  then first-party distributions, then by plugin name and distribution name;
* a second claim is refused: the claimant is listed broken with a
  :class:`~hub.errors.ComponentConflictError` naming both distributions; the owner keeps working.
"""

from __future__ import annotations

from .._names import normalize_name
from ..errors import ComponentConflictError
from ._loader import CORE_DISTRIBUTION, Candidate

__all__ = ["FIRST_PARTY", "claim_problem", "load_rank"]

#: Plugin names of the first-party distributions (plugins/ and registry/ of this repository):
#: only that distribution may register the name, installed or not, so installing some package
#: can never replace a first-party component (``mscclang.ir``) with its own.
FIRST_PARTY = {
    "astrasim": "collhub-astrasim",
    "forest": "collhub-forest",
    "mscclang": "collhub-mscclang",
    "mscclpp": "collhub-mscclpp",
    "nccl": "collhub-nccl",
    "registry": "collhub-registry",
    "replay": "collhub-replay",
    "taccl": "collhub-taccl",
    "tacos": "collhub-tacos",
}


def load_rank(cand: Candidate) -> int:
    """0 the core, 1 a first-party distribution under its own name, 2 any other."""
    dist = normalize_name(cand.distribution)
    if dist == CORE_DISTRIBUTION:
        return 0
    return 1 if FIRST_PARTY.get(cand.name) == dist else 2


def claim_problem(cand: Candidate, owner: str | None) -> ComponentConflictError | None:
    """Why ``cand`` may not register its plugin name (and so its component ids), or None.

    A name belongs to the distribution that registered it first (the load order puts the core
    and the first-party distributions first); the names of the first-party distributions are
    theirs even when they are not installed."""
    dist = normalize_name(cand.distribution)
    reserved = FIRST_PARTY.get(cand.name)
    if reserved is not None and reserved != dist:
        return ComponentConflictError(
            f"plugin {cand.name!r} from {cand.distribution} {cand.version}: the plugin name {cand.name!r} "
            f"(and its component ids {cand.name}.*) belongs to {reserved}; {cand.distribution} may not take it",
            hint=f"uninstall {cand.distribution}, or set COLLHUB_DISABLE_PLUGINS={cand.distribution}",
        )
    if owner is not None and normalize_name(owner) != dist:
        return ComponentConflictError(
            f"plugin {cand.name!r} from {cand.distribution} {cand.version}: the plugin name {cand.name!r} "
            f"(and its component ids {cand.name}.*) is already registered by {owner}; "
            f"{cand.distribution}'s claim is refused",
            hint=f"uninstall one of {owner} and {cand.distribution}, "
            f"or set COLLHUB_DISABLE_PLUGINS={cand.distribution}",
        )
    return None
