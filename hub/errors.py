"""The collhub exception tree.

Every error the library raises on purpose derives from :class:`HubError`. Each carries a
one-line ``message`` and an optional ``hint``; the CLI prints them as ``error: ...`` and
``hint: ...`` and maps the class to an exit code (see :mod:`hub.cli` and ``docs/cli.md``).

::

    HubError                          base; .message, .hint, .exit_code
    ├── UsageError                    wrong parameters or values given by the user   (exit 2)
    ├── FormatError                   a file we read is malformed                    (exit 3)
    │   ├── TraceFormatError          Chakra ET: bad varint, truncated message, ...  (.path, .rank, .node)
    │   ├── TopologyFormatError       network.yml / topology string
    │   └── ImportFormatError         a foreign algorithm file (MSCCL-IR XML, ...)   (.path, .line)
    ├── VerificationError             an algorithm is structurally or semantically wrong (exit 3)
    │                                 .problems: list[Problem]
    │   ├── StructureError            ids, dependencies, send/recv matching
    │   ├── DeadlockError             no progress under ASTRA-sim execution semantics
    │   └── SemanticsError            does not compute its declared collective
    ├── AlgorithmError                a producer cannot make what was asked (e.g. rank count) (exit 2)
    │   └── SynthesisInputError       a synthesizer's problem is ill-posed (chunks <= 0, ranks vs topology) (exit 3)
    ├── SimulationError               a consumer could not simulate the input        (exit 1)
    ├── ExportError                   a consumer cannot express the input in its target format (exit 1)
    ├── OutputError                   an output could not be written: disk full, I/O error (exit 1)
    ├── PluginError                   plugin loading and resolution                  (exit 4)
    │   ├── PluginLoadError           an entry point failed to import or register
    │   ├── IncompatiblePluginError   plugin API version or requires_hub mismatch
    │   ├── ComponentConflictError    two plugins provide the same component id
    │   ├── ComponentNotFoundError    unknown component id (with "did you mean")
    │   └── WorkerPluginError         a cluster worker lacks a plugin a run needs (names both)
    ├── PipelineError                 pipeline files and runs
    │   ├── PipelineValidationError   .issues: list[Issue] (file:line:col, YAML path)  (exit 3)
    │   └── StepFailedError           a step failed at run time                      (exit 1)
    ├── ExternalToolError             an external binary is missing, failed or timed out (exit 1)
    ├── NotInstalledError             a plugin the user named is not installed here  (exit 3)
    ├── RegistryError                 plugin registry                                (exit 5)
    │   ├── RegistryUnavailableError  network error, timeout, bad status
    │   ├── RegistryFormatError       the index does not match the documented format
    │   └── IntegrityError            a download's sha256 or size does not match the index
    └── ClusterError                  a compute cluster (Dask) a run executes on      (exit 5)
        └── ClusterUnavailableError   the scheduler cannot be reached within the connect timeout
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._findings import Issue, Problem

__all__ = [
    "AlgorithmError",
    "ClusterError",
    "ClusterUnavailableError",
    "ComponentConflictError",
    "ComponentNotFoundError",
    "DeadlockError",
    "ExitCode",
    "ExportError",
    "ExternalToolError",
    "FormatError",
    "HubError",
    "ImportFormatError",
    "IncompatiblePluginError",
    "IntegrityError",
    "Issue",
    "OutputError",
    "NotInstalledError",
    "PipelineError",
    "PipelineValidationError",
    "PluginError",
    "PluginLoadError",
    "Problem",
    "ProducerNote",
    "RegistryError",
    "RegistryFormatError",
    "RegistryUnavailableError",
    "SemanticsError",
    "SimulationError",
    "StepFailedError",
    "StructureError",
    "SynthesisInputError",
    "TopologyFormatError",
    "TraceFormatError",
    "UsageError",
    "VerificationError",
    "WorkerPluginError",
]


class ExitCode:
    """Process exit codes used by the ``collhub`` CLI."""

    OK = 0
    RUN_FAILED = 1
    USAGE = 2
    VALIDATION = 3
    PLUGIN = 4
    REGISTRY = 5
    INTERRUPTED = 130


class HubError(Exception):
    """Base of every error collhub raises on purpose."""

    exit_code: int = ExitCode.RUN_FAILED

    def __init__(self, message: str, *, hint: str | None = None, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.context = context

    def __str__(self) -> str:
        return self.message


class UsageError(HubError, ValueError):
    """Wrong parameters or values given by the user."""

    exit_code = ExitCode.USAGE


class FormatError(HubError, ValueError):
    """A file we read is malformed."""

    exit_code = ExitCode.VALIDATION


class TraceFormatError(FormatError):
    """A Chakra ET file is malformed: bad varint, truncated message, missing attribute, ..."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        rank: int | None = None,
        node: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if rank is not None:
            where.append(f"rank {rank}")
        if node is not None:
            where.append(f"node {node}")
        full = f"{', '.join(where)}: {message}" if where else message
        super().__init__(full, hint=hint)
        self.path = path
        self.rank = rank
        self.node = node


class TopologyFormatError(FormatError):
    """A topology string or ``network.yml`` is malformed or inconsistent."""


class ImportFormatError(FormatError):
    """A foreign algorithm file (MSCCL-IR XML, ...) is malformed."""

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, hint: str | None = None
    ) -> None:
        where = str(path) if path is not None else ""
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.path = path
        self.line = line


class VerificationError(HubError):
    """An algorithm is wrong; ``problems`` lists every finding."""

    exit_code = ExitCode.VALIDATION

    def __init__(self, message: str, *, problems: list[Problem] | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.problems: list[Problem] = list(problems or [])


class StructureError(VerificationError):
    """Ids, dependencies or send/recv matching are wrong."""


class DeadlockError(VerificationError):
    """The algorithm cannot make progress under ASTRA-sim's execution semantics."""


class SemanticsError(VerificationError):
    """The algorithm does not compute its declared collective."""


class AlgorithmError(HubError, ValueError):
    """A producer cannot make what was asked (unsupported collective, rank count, ...)."""

    exit_code = ExitCode.USAGE


class SynthesisInputError(AlgorithmError):
    """A synthesizer was given an ill-posed problem: chunks <= 0, a rank count that does not match
    the topology (a disconnected or zero-bandwidth network is a :class:`TopologyFormatError`)."""

    exit_code = ExitCode.VALIDATION


class SimulationError(HubError):
    """A consumer could not simulate its input."""


class ExportError(HubError):
    """A consumer cannot express its input in the target format."""


class PluginError(HubError):
    """Plugin loading and component resolution."""

    exit_code = ExitCode.PLUGIN


class PluginLoadError(PluginError):
    """An entry point failed to import or to register."""


class IncompatiblePluginError(PluginError):
    """A plugin needs a newer plugin API major version or another collhub version."""


class ComponentConflictError(PluginError):
    """Two plugins provide the same component id."""


class ComponentNotFoundError(PluginError, KeyError):
    """No installed plugin provides the requested component id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class WorkerPluginError(PluginError):
    """A worker of a cluster (``collhub run --executor dask``) lacks a plugin a unit needs."""


class PipelineError(HubError):
    """Pipeline files and runs."""


class PipelineValidationError(PipelineError):
    """A pipeline file is invalid; ``issues`` lists every problem found."""

    exit_code = ExitCode.VALIDATION

    def __init__(self, message: str, *, issues: list[Issue] | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.issues: list[Issue] = list(issues or [])


class StepFailedError(PipelineError):
    """A pipeline step failed at run time."""


class OutputError(HubError):
    """An output could not be written although its place is usable: the disk or quota is full,
    an I/O error (exit 1; nothing half-written stays). An unusable place (under a regular file,
    not writable, a special file system) is a :class:`UsageError` instead (exit 2)."""


class ExternalToolError(HubError):
    """An external binary (e.g. ASTRA-sim) is missing, failed or timed out."""


class NotInstalledError(HubError, LookupError):
    """A plugin distribution named by the user is not installed here (``collhub uninstall``)."""

    exit_code = ExitCode.VALIDATION


class RegistryError(HubError):
    """Plugin registry errors."""

    exit_code = ExitCode.REGISTRY


class RegistryUnavailableError(RegistryError):
    """The registry could not be reached or answered with an error status."""


class RegistryFormatError(RegistryError):
    """A registry document does not match the documented index format."""


class IntegrityError(RegistryError):
    """A downloaded file does not match the sha256 or size the index promises."""


class ClusterError(HubError):
    """A compute cluster a run executes on (``collhub run --executor dask``) cannot serve it:
    no workers, or a worker that cannot see the run directory. Exit 5, as other services."""

    exit_code = ExitCode.REGISTRY


class ClusterUnavailableError(ClusterError):
    """The cluster's scheduler could not be reached within the connect timeout."""


class ProducerNote(UserWarning):
    """What a producer tells its user about its output (not an error), e.g. that a synthesizer
    returned its fallback; ``collhub`` prints it as one ``warning: ...`` line on stderr."""


def __getattr__(name: str) -> Any:
    """``Problem`` and ``Issue``, made on first use (PEP 562): every command imports this module,
    and a frozen dataclass costs more to create (its methods are compiled from source) than the
    rest of the module; only verification and pipeline validation use them."""
    if name in ("Problem", "Issue"):
        from . import _findings

        value = getattr(_findings, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
