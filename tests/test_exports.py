"""Every package's ``__all__`` is exactly its public surface (the rule httpx tests for itself).

Public names are those without a leading underscore in the package namespace, once every name
in ``__all__`` has been resolved (several packages resolve names lazily, PEP 562). Two kinds of
binding are not exports and are left out: submodules (Python binds ``pkg.sub`` as a side effect
of importing it) and ``from __future__`` features.
"""

from __future__ import annotations
import __future__

import importlib
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _packages() -> list[str]:
    """Every package of the core and of the first-party distributions in this repository."""
    roots = [
        REPO / "hub",
        *sorted((REPO / "plugins").glob("*/collhub_*")),
        *sorted((REPO / "registry").glob("collhub_*")),
    ]
    names = []
    for root in roots:
        for init in sorted(root.rglob("__init__.py")):
            rel = init.parent.relative_to(root.parent)
            names.append(".".join(rel.parts))
    return names


PACKAGES = _packages()


def test_the_package_list_covers_the_core_plugins_and_the_registry() -> None:
    # the list is computed from the tree: make sure the glob found what it must
    assert {"hub", "hub.chakra", "hub.registry", "collhub_mscclang", "collhub_registry"} <= set(PACKAGES)


def _public(module: types.ModuleType) -> set[str]:
    out = set()
    for name, value in vars(module).items():
        if name.startswith("_") or not name.isidentifier():
            continue  # private, or pytest's assertion-rewriting helpers ("@py_builtins")
        if isinstance(value, types.ModuleType) and value.__name__ == f"{module.__name__}.{name}":
            continue  # a submodule, bound because something imported it
        if isinstance(value, __future__._Feature):
            continue
        out.add(name)
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_all_lists_exactly_the_public_names(package: str) -> None:
    module = importlib.import_module(package)
    declared = getattr(module, "__all__", None)
    if any(part.startswith("_") for part in package.split(".")[1:]) and declared == []:
        # a private subpackage (hub.sim._engine): a room of its parent, which names what is public
        assert module.__doc__, f"{package} does not say what it holds"
        assert not _public(module), f"{package} exports names: {sorted(_public(module))}"
        return
    assert isinstance(declared, list) and declared, f"{package} has no __all__ list"
    assert len(declared) == len(set(declared)), f"{package}.__all__ repeats a name"
    missing = [name for name in declared if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"
    undeclared = sorted(_public(module) - set(declared))
    assert not undeclared, f"{package} exports names missing from __all__: {undeclared}"


def test_topology_is_exported_from_hub() -> None:
    import hub
    from hub.topology import Topology

    assert "Topology" in hub.__all__ and hub.Topology is Topology
