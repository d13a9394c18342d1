"""``collhub trace show | verify | convert``: inspect and convert Chakra ET traces."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import ExitCode, FormatError, UsageError
from ._graph import GraphFormat, show_graph
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out

__all__ = ["app"]

app = typer.Typer(help="Show, verify and convert Chakra ET traces.", no_args_is_help=True, rich_markup_mode=None)


@app.command("show")
def show(
    prefix: str = typer.Argument(..., metavar="PREFIX", help="Trace prefix (<PREFIX>.<rank>.et)."),
    fmt: OutputFormat = FORMAT_OPTION,
    graph: Optional[GraphFormat] = typer.Option(None, "--graph", help="Draw the DAG instead: dot, graphml or svg."),
    rank: Optional[int] = typer.Option(None, "--rank", min=0, help="With --graph: only this rank (default: all, "
                                       "with message edges)."),
    graph_out: Optional[Path] = typer.Option(None, "--out", "-o", help="With --graph: write here, not to stdout."),
) -> None:
    """Summarise a trace: collective, ranks, nodes, messages, bytes; or draw its DAG (--graph).

    Example: collhub trace show out/ring --graph svg --rank 0 -o ring0.svg
    """
    from ..chakra import Algorithm, read_trace, summarize

    obj = read_trace(prefix)
    if graph is not None:
        show_graph(obj, graph, rank, graph_out)
        return
    if rank is not None or graph_out is not None:
        raise UsageError("--rank and --out go with --graph", hint="e.g. --graph dot --rank 0")
    if fmt == OutputFormat.json:
        kind = "algorithm" if isinstance(obj, Algorithm) else "workload"
        summary = obj.summary() if hasattr(obj, "summary") and callable(obj.summary) else {"text": summarize(obj)}
        emit_json({"prefix": prefix, "kind": kind, "summary": summary})
    else:
        out(summarize(obj))


@app.command("verify")
def verify(
    prefix: str = typer.Argument(..., metavar="PREFIX", help="Algorithm trace prefix."),
    level: str = typer.Option("semantics", "--level", "-l",
                              help="Deepest check: structure, progress or semantics (each includes the previous)."),
    max_problems: int = typer.Option(50, "--max-problems", min=1, metavar="N",
                                     help="List at most N problems (all are counted)."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Check that a trace is well formed, deadlock free and computes its collective (exit 3 if not)."""
    from ..chakra import Algorithm, read_trace
    from ..verify import verify as run_verify

    if level not in ("structure", "progress", "semantics"):
        raise UsageError(f"unknown level {level!r}", hint="use structure, progress or semantics")
    alg = read_trace(prefix)
    if not isinstance(alg, Algorithm):
        raise UsageError(f"{prefix}: is a workload trace; only algorithms can be verified")
    report = run_verify(alg, level=level, max_problems=max_problems)
    problems = list(report.problems)
    if fmt == OutputFormat.json:
        emit_json({
            "prefix": prefix,
            "ok": bool(report.ok),
            "levels_checked": list(report.levels_checked),
            "not_checked": dict(report.not_checked),
            "notes": list(report.notes),
            "problem_count": report.problem_count,
            "problems": [{"level": p.level, "message": p.message, "rank": p.rank, "node": p.node, "origin": p.origin}
                         for p in problems],
        })
    elif report.ok:
        out(f"ok: {prefix}: {alg.meta.collective} on {alg.ranks} ranks (checked {report.checked_text()})")
        for note in report.notes:
            err(f"note: {note}")
    else:
        for p in problems:
            out(str(p))
    if not report.ok:
        shown = f" ({len(problems)} listed; --max-problems N lists more)" if len(problems) < report.problem_count else ""
        err(f"error: {prefix}: verification failed with {report.problem_count} problem(s){shown}")
        raise typer.Exit(ExitCode.VALIDATION)


@app.command("convert")
def convert(
    src: str = typer.Argument(..., metavar="SRC", help="ET prefix, or a .json file."),
    dst: str = typer.Argument(..., metavar="DST", help="A .json file (from ET), or an ET prefix (from JSON)."),
) -> None:
    """Convert an algorithm between Chakra ET files and collhub's JSON view, both ways."""
    from ..chakra import algorithm_from_json, algorithm_to_json, read_algorithm, write_algorithm

    if src.endswith(".json") and not dst.endswith(".json"):
        try:
            data: Any = json.loads(Path(src).read_text())
        except OSError as exc:
            raise UsageError(f"{src}: cannot read: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise FormatError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        try:
            alg = algorithm_from_json(data)
        except FormatError as exc:
            # The library does not know the file name; the user needs it.
            raise FormatError(f"{src}: {exc.message}", hint=exc.hint) from None
        files = write_algorithm(alg, dst)
        out(f"wrote {len(files)} file(s): {dst}.0.et ...")
    elif dst.endswith(".json") and not src.endswith(".json"):
        text = json.dumps(algorithm_to_json(read_algorithm(src)), indent=1)
        target = Path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, target)  # never leave a half-written file behind
        out(f"wrote {dst}")
    else:
        raise UsageError("convert needs one ET prefix and one .json file",
                         hint="collhub trace convert out/ring out/ring.json   (or the reverse)")
