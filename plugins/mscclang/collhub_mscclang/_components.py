"""Component factories: thin adapters between the hub's call signatures and the plugin's code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hub import Result
from hub.chakra import Algorithm, Collective, check_algorithm
from hub.errors import ExportError, ImportFormatError, UsageError

from ._reader import read_msccl_ir

if TYPE_CHECKING:  # each factory is called with its own model; a component loads only its own
    from ._params import IRParams
    from ._params_export import ExportParams
    from ._params_program import ProgramParams

__all__ = ["consume_export", "produce_ir", "produce_program"]


def produce_ir(params: IRParams, ctx: Any) -> Algorithm:
    """Factory of ``mscclang.ir``."""
    alg = read_msccl_ir(
        params.path,
        name=params.name,
        max_bytes=params.max_bytes,
        inplace=params.inplace,
        root=params.root,
        names=params.names,
    )
    if params.collective is not None and Collective.parse(params.collective) is not alg.collective:
        raise ImportFormatError(
            f"the file is a {alg.collective.value}, not a {params.collective}", path=str(params.path)
        )
    if params.ranks is not None and params.ranks != alg.ranks:
        raise ImportFormatError(f"the file has ngpus={alg.ranks}, not ranks={params.ranks}", path=str(params.path))
    if params.verify is not False:
        _verify_import(alg, params)
    return alg


def _verify_import(alg: Algorithm, params: IRParams) -> None:
    """A file that does not compute its collective is worth importing (to look at it), but never
    silently: warn, or with ``verify=true`` fail with the verifier's own error.

    The reader has proven the structure level while lowering (every check of hub.verify's
    structure level has its counterpart in _stepcols/_lower/_reader._check_connections, and the
    graphs are built in a topological order), so the verifier starts at the progress level
    (``structure_proven``); tests compare the reports with and without it."""
    from hub.verify import check, verify

    if params.verify:
        check(alg, structure_proven=True)
        return
    rep = verify(alg, max_problems=1, structure_proven=True)
    if not rep.ok:
        import logging  # (only here: the import command's start-up is part of its time)

        logging.getLogger("collhub.mscclang").warning(
            "warning: %s: fails verification with %d problem(s), first: %s\n"
            "hint: `collhub trace verify OUT` lists them; --set verify=true makes this an error",
            params.path,
            rep.problem_count,
            rep.problems[0],
        )


def produce_program(params: ProgramParams, ctx: Any) -> Algorithm:
    """Factory of ``mscclang.program``."""
    from ._program import run_program

    return run_program(params.path, params.args, engine=params.engine, name=params.name, timeout_s=params.timeout_s)


def consume_export(obj: Any, params: ExportParams, ctx: Any) -> Result:
    """Factory of ``mscclang.export``."""
    from ._writer import write_msccl_ir  # not on the import command's path

    if not isinstance(obj, Algorithm):
        raise ExportError("mscclang.export takes an algorithm, not a workload")
    check_algorithm(obj, what=f"algorithm {obj.name or obj.collective.value!r}")  # values it relies on
    out = Path(params.out)
    if not out.is_absolute():
        out = Path(getattr(ctx, "workdir", Path.cwd())) / out
    if out.suffix.lower() != ".xml":
        raise UsageError(f"out={params.out} should end in .xml")
    earlier = out.exists()  # a named file is replaced (atomically), never without a word
    stats = write_msccl_ir(
        obj,
        out,
        target=params.target,
        proto=params.proto,
        min_bytes=params.min_bytes,
        max_bytes=params.max_bytes,
        name=params.name,
        fuse=params.fuse,
        threadblocks=params.threadblocks,
        enforce_limits=params.enforce_limits,
        verify=params.verify,
    )
    return Result(
        component="mscclang.export",
        metrics={"target": params.target, **stats.as_metrics()},
        artifacts={"xml": str(out)},
        warnings=[f"replaced the earlier {out}"] if earlier else [],
    )
