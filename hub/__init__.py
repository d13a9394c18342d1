"""collhub: producers and consumers of collective algorithms meet on Chakra ET.

The public API. Names are resolved lazily (PEP 562) so that ``import hub`` and
``collhub --help`` stay fast: numpy, pydantic and pluggy load only when a name that needs them
is first used, and ``importlib.metadata`` only when ``__version__`` is.

The common path takes one import: ``hub.make`` (a built-in algorithm), ``hub.check``,
``hub.simulate``, ``hub.read_algorithm`` / ``hub.write_algorithm`` (and the workload pair),
``hub.load_topology``, ``hub.load_pipeline`` / ``hub.run_pipeline``. ``verify`` (the report rather
than the raise) stays ``hub.verify.verify``: ``hub.verify`` is the package. What plugin authors
register with (``hookimpl``, the component specs, ``RunContext``) lives in :mod:`hub.plugins`; the
old ``from hub import hookimpl`` keeps working but is not part of ``__all__``.
"""

from __future__ import annotations

# private aliases: every public name of this module is in __all__ (tests/test_exports.py)
import typing as _typing

from . import errors
from ._lazy import lazy_exports as _lazy_exports
from .errors import HubError

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "Algorithm": "hub.chakra",
    "AlgorithmMeta": "hub.chakra",
    "Buffer": "hub.chakra",
    "Collective": "hub.chakra",
    "NodeType": "hub.chakra",
    "Op": "hub.chakra",
    "RankGraph": "hub.chakra",
    "RankGraphBuilder": "hub.chakra",
    "Workload": "hub.chakra",
    "WorkloadNode": "hub.chakra",
    "Result": "hub._result",
    "Topology": "hub.topology",
    "parse_size": "hub._units",
    "range_values": "hub._ranges",
    # the verbs of the common path
    "make": "hub.algorithms",
    "check": "hub.verify",
    "simulate": "hub.sim",
    "read_algorithm": "hub.chakra",
    "write_algorithm": "hub.chakra",
    "read_workload": "hub.chakra",
    "write_workload": "hub.chakra",
    "load_topology": "hub.topology",
    "load_pipeline": "hub.pipeline",
    "run_pipeline": "hub.pipeline",
}

# registration plumbing, public in hub.plugins: still answered here for older plugins and docs,
# looked up on every use (never bound in this namespace) and left out of __all__ and dir()
_PLUMBING: frozenset[str] = frozenset({"ConsumerSpec", "ProducerSpec", "TransformSpec", "RunContext", "hookimpl"})

__all__ = sorted([*_LAZY, "HubError", "__version__", "errors"])


_lazy_getattr, _ = _lazy_exports(__name__, _LAZY, globals())


def __getattr__(name: str) -> _typing.Any:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    if name in _PLUMBING:
        from . import plugins

        return getattr(plugins, name)
    return _lazy_getattr(name)


def _version() -> str:
    # importlib.metadata costs ~30 ms to import: only when someone asks for the version
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("collhub")
    except PackageNotFoundError:  # running from a source tree without installation
        return "0.0.0+unknown"


def __dir__() -> list[str]:
    return __all__


if _typing.TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    __version__: str
    from ._ranges import range_values
    from ._result import Result
    from ._units import parse_size
    from .algorithms import make
    from .chakra import (
        Algorithm,
        AlgorithmMeta,
        Buffer,
        Collective,
        NodeType,
        Op,
        RankGraph,
        RankGraphBuilder,
        Workload,
        WorkloadNode,
        read_algorithm,
        read_workload,
        write_algorithm,
        write_workload,
    )
    from .pipeline import load_pipeline, run_pipeline
    from .plugins import ConsumerSpec, ProducerSpec, RunContext, TransformSpec, hookimpl
    from .sim import simulate
    from .topology import Topology, load_topology
    from .verify import check
