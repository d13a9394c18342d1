"""The components' factories: ``mscclpp.plan`` (producer) and ``mscclpp.export`` (consumer)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hub import Result
from hub.chakra import Algorithm, check_algorithm
from hub.errors import DeadlockError, ExportError, ImportFormatError, Problem, UsageError

from ._import import Imported, read_plan
from ._params import PlanParams
from ._params_export import ExportParams

__all__ = ["consume_export", "plan_problems", "produce_plan", "write_plan"]

_log = logging.getLogger("collhub.mscclpp")


def produce_plan(params: PlanParams, ctx: Any) -> Algorithm:
    """Factory of ``mscclpp.plan``."""
    imp = read_plan(params.path, size=params.size, name=params.name, max_bytes=params.max_bytes)
    _limits(imp, params)
    problems = plan_problems(imp)
    if problems:
        if params.verify:
            raise DeadlockError(
                f"{params.path}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                problems=problems,
                hint="the plan would hang on the GPU; fix the listed thread blocks",
            )
        _log.warning(
            "warning: %s: %d problem(s) the executor would hang on, first: %s", params.path, len(problems), problems[0]
        )
    if params.verify is not False:
        _verify(imp.algorithm, params)
    return imp.algorithm


def plan_problems(imp: Imported) -> list[Problem]:
    """The import's own findings (hangs the graph cannot hold), as verifier problems."""
    out = []
    for p in imp.problems:
        where = None
        if p.block is not None:
            where = f"gpu {p.gpu} tb {p.block}" + (f" op {p.op} ({p.opname})" if p.op is not None else "")
        out.append(Problem("progress", p.message, rank=p.gpu, origin=where))
    return out


def _limits(imp: Imported, params: PlanParams) -> None:
    if not imp.limits:
        return
    hard = [f for f in imp.limits if f.rejected or params.limits == "strict"]
    if hard and params.limits != "warn":
        f = hard[0]
        more = f" (and {len(imp.limits) - 1} more limit finding(s))" if len(imp.limits) > 1 else ""
        raise ImportFormatError(
            f"{f}{more}",
            path=str(params.path),
            hint="the MSCCL++ executor " + ("refuses" if f.rejected else "cannot hold") + " this plan; "
            "--set limits=warn imports it anyway",
        )
    _log.warning(
        "warning: %s: %d finding(s) beyond the executor's capacities (undefined behaviour on the GPU), first: %s",
        params.path,
        len(imp.limits),
        imp.limits[0],
    )


def _verify(alg: Algorithm, params: PlanParams) -> None:
    from hub.verify import check, verify

    if params.verify:
        check(alg)
        return
    rep = verify(alg, max_problems=1)
    if not rep.ok:
        _log.warning(
            "warning: %s: fails verification with %d problem(s), first: %s\n"
            "hint: `collhub trace verify OUT` lists them; --set verify=true makes this an error",
            params.path,
            rep.problem_count,
            rep.problems[0],
        )


def write_plan(alg: Algorithm, out: Path, params: ExportParams) -> dict[str, Any]:
    """Export ``alg`` to ``out`` (atomically); with ``params.verify`` re-import it first and verify."""
    from hub.atomic import write_file

    from ._export import algorithm_to_plan
    from ._plan import parse_plan

    plan, stats = algorithm_to_plan(
        alg,
        protocol=params.protocol,
        channel=params.channel,
        name=params.name,
        min_message_size=params.min_message_size,
        max_message_size=params.max_message_size,
    )
    if params.verify:
        from hub.verify import check

        from ._import import plan_to_algorithm

        back = plan_to_algorithm(parse_plan(plan, str(out)))
        if back.problems or back.limits:
            first = (back.problems or back.limits)[0]
            raise ExportError(f"the exported plan fails its own checks: {first}")
        check(back.algorithm, level="semantics" if alg.collective.value != "custom" else "progress")
    text = json.dumps(plan, indent=1)
    write_file(out, text + "\n")
    return stats.as_metrics()


def consume_export(obj: Any, params: ExportParams, ctx: Any) -> Result:
    """Factory of ``mscclpp.export``."""
    if not isinstance(obj, Algorithm):
        raise ExportError("mscclpp.export takes an algorithm, not a workload")
    check_algorithm(obj, what=f"algorithm {obj.name or obj.collective.value!r}")
    out = Path(params.out)
    if not out.is_absolute():
        out = Path(getattr(ctx, "workdir", Path.cwd())) / out
    if out.suffix.lower() != ".json":
        raise UsageError(f"out={params.out} should end in .json")
    earlier = out.exists()  # a named file is replaced (atomically), never without a word
    metrics = write_plan(obj, out, params)
    warnings = [f"replaced the earlier {out}"] if earlier else []
    return Result(component="mscclpp.export", metrics=metrics, artifacts={"plan": str(out)}, warnings=warnings)
