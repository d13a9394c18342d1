"""``collhub trace show | verify | convert``: inspect and convert Chakra ET traces."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
    graph: GraphFormat | None = typer.Option(None, "--graph", help="Draw the DAG instead: dot, graphml or svg."),
    rank: int | None = typer.Option(
        None, "--rank", min=0, help="With --graph: only this rank (default: all, with message edges)."
    ),
    graph_out: Path | None = typer.Option(None, "--out", "-o", help="With --graph: write here, not to stdout."),
) -> None:
    """Summarise a trace: collective, ranks, nodes, messages, bytes; or draw its DAG (--graph).

    Example: collhub trace show out/ring --graph svg --rank 0 -o ring0.svg
    """
    import warnings

    from ..chakra import Algorithm, DanglingDependencyWarning, algorithm_summary, iter_ranks, read_trace, summarize
    from ..chakra._reader import trace_kind
    from ..chakra._workload_summary import workload_summary

    if graph is None and rank is None and graph_out is None and trace_kind(prefix) == "algorithm":
        # an algorithm's summary is counted rank by rank: no need to hold every graph at once
        stream = iter_ranks(prefix)
        if fmt == OutputFormat.json:
            emit_json({"prefix": prefix, "kind": "algorithm", "summary": algorithm_summary(stream.meta, stream)})
        else:
            out(summarize(stream))
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DanglingDependencyWarning)
        obj = read_trace(prefix)
    for w in caught:  # reported once, as one line; never a failure
        err(f"warning: {w.message}")
    if graph is not None:
        from ._progress import working

        # only when the picture goes to a file: a drawing printed to the terminal is the output
        as_json = fmt == OutputFormat.json
        with working(f"drawing {prefix} as {graph.value}", json_output=graph_out is None or as_json):
            show_graph(obj, graph, rank, graph_out, prefix=prefix, as_json=as_json)
        return
    if rank is not None or graph_out is not None:
        raise UsageError("--rank and --out go with --graph", hint="e.g. --graph dot --rank 0")
    if fmt == OutputFormat.json:
        kind = "algorithm" if isinstance(obj, Algorithm) else "workload"
        if isinstance(obj, Algorithm):
            summary = algorithm_summary(obj.meta, obj.graphs)
        else:
            summary = workload_summary(obj)
        emit_json({"prefix": prefix, "kind": kind, "summary": summary})
    else:
        out(summarize(obj))


@app.command("verify")
def verify(
    prefix: str = typer.Argument(..., metavar="PREFIX", help="Algorithm trace prefix."),
    level: str = typer.Option(
        "semantics",
        "--level",
        "-l",
        help="Deepest check: structure, progress or semantics (each includes the previous).",
    ),
    max_problems: int = typer.Option(
        50, "--max-problems", min=1, metavar="N", help="List at most N problems (all are counted)."
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Check that a trace is well formed, deadlock free and computes its collective (exit 3 if not).

    Example: collhub trace verify out/ring --max-problems 10
    """
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
        emit_json(
            {
                "prefix": prefix,
                "ok": bool(report.ok),
                "levels_checked": list(report.levels_checked),
                "not_checked": dict(report.not_checked),
                "notes": list(report.notes),
                "problem_count": report.problem_count,
                "problems": [
                    {"level": p.level, "message": p.message, "rank": p.rank, "node": p.node, "origin": p.origin}
                    for p in problems
                ],
            }
        )
    elif report.ok:
        out(f"ok: {prefix}: {alg.meta.collective} on {alg.ranks} ranks (checked {report.checked_text()})")
        for note in report.notes:
            err(f"note: {note}")
    else:
        for p in problems:
            out(str(p))
    if not report.ok:
        listed = f" ({len(problems)} listed; --max-problems N lists more)"
        shown = listed if len(problems) < report.problem_count else ""
        err(f"error: {prefix}: verification failed with {report.problem_count} problem(s){shown}")
        raise typer.Exit(ExitCode.VALIDATION)


#: the largest JSON view ``convert`` reads (json.loads needs several times the text in memory;
#: the JSON view is for inspection, very large sets belong in ET files)
_MAX_JSON_BYTES = 1 << 30


def _read_json_file(path: Path) -> str:
    """The text of a regular file (a fifo or device is refused before it can block us)."""
    import stat

    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path}: is not a regular file", hint="convert reads JSON from a regular file")
    if st.st_size > _MAX_JSON_BYTES:
        raise FormatError(f"{path}: {st.st_size} bytes is more than the {_MAX_JSON_BYTES} a JSON view may have")
    return path.read_bytes().decode("utf-8")


@app.command("convert")
def convert(
    src: str = typer.Argument(..., metavar="SRC", help="ET prefix, or a .json file."),
    dst: str = typer.Argument(..., metavar="DST", help="A .json file (from ET), or an ET prefix (from JSON)."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Convert an algorithm between Chakra ET files and collhub's JSON view, both ways.

    Example: collhub trace convert out/ring ring.json
    """
    from ..atomic import write_file
    from ..chakra import algorithm_from_json, algorithm_to_json, read_algorithm, write_algorithm

    if src.endswith(".json") and not dst.endswith(".json"):
        try:
            data: Any = json.loads(_read_json_file(Path(src)))
        except OSError as exc:
            # a missing or unreadable input is a bad input file, exit 3 as for an ET prefix
            raise FormatError(
                f"{src}: cannot read: {exc.strerror or exc}",
                hint="give an existing .json file (trace convert PREFIX FILE.json writes one)",
            ) from None
        except UnicodeDecodeError as exc:
            raise FormatError(f"{src}: not UTF-8 text (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise FormatError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        try:
            alg = algorithm_from_json(data)
        except FormatError as exc:
            # The library does not know the file name; the user needs it.
            raise FormatError(f"{src}: {exc.message}", hint=exc.hint) from None
        files = write_algorithm(alg, dst)
        if fmt == OutputFormat.json:
            emit_json({"src": src, "dst": dst, "format": "et", "written": [str(f) for f in files]})
        else:
            out(f"wrote {len(files)} file(s): {dst}.0.et ...")
    elif dst.endswith(".json") and not src.endswith(".json"):
        text = json.dumps(algorithm_to_json(read_algorithm(src)), indent=1)
        write_file(dst, text)  # never half-written; 0666 minus the umask
        if fmt == OutputFormat.json:
            emit_json({"src": src, "dst": dst, "format": "json", "written": [dst]})
        else:
            out(f"wrote {dst}")
    else:
        raise UsageError(
            "convert needs one ET prefix and one .json file",
            hint="collhub trace convert out/ring out/ring.json   (or the reverse)",
        )


@app.command("inline")
def inline(
    src: str = typer.Argument(..., metavar="SRC", help="Workload trace prefix (<SRC>.<rank>.et)."),
    dst: str = typer.Argument(..., metavar="DST", help="Prefix of the inlined workload to write."),
    algorithm: list[str] = typer.Option(
        [],
        "--algorithm",
        "-a",
        metavar="COLL=ALG",
        help="Algorithm per collective, e.g. allreduce=ring or alltoall=out/a2a "
        "(an ET prefix); default ring. Repeatable.",
    ),
    kind: list[str] = typer.Option([], "--kind", help="Inline only this collective kind. Repeatable."),
    recognize: bool = typer.Option(
        False,
        "--recognize",
        help="First turn gloo collectives held as COMP nodes (gloo:all_reduce, ...) into COMM_COLL nodes.",
    ),
    overlap: int = typer.Option(
        1,
        "--overlap",
        min=1,
        max=1024,
        metavar="K",
        help="Overlap each collective with its producer COMP in K pieces (hub.overlap).",
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Replace a workload's COMM_COLL nodes with their algorithm's SEND/RECV/COMP nodes (hub.inline).

    Example: collhub trace inline out/llama out/llama-inlined -a allreduce=ring -a alltoall=out/a2a
    """
    import warnings

    from ..chakra import DanglingDependencyWarning, read_workload, write_workload
    from ..plugins import get_manager
    from ..workload import InlineParams, overlap_workload

    mapping: dict[str, str] = {}
    for item in algorithm:
        coll, sep, alg = item.partition("=")
        if not sep or not coll or not alg:
            raise UsageError(f"--algorithm {item!r} is not COLL=ALG", hint="e.g. --algorithm allreduce=ring")
        mapping[coll] = alg
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DanglingDependencyWarning)
        wl = read_workload(src)
    for w in caught:
        err(f"warning: {w.message}")

    def produce(component: str, coll: Any, ranks: int) -> Any:  # the plugins load only for a producer id
        return get_manager().produce_algorithm(component, coll, ranks)

    params = InlineParams(kinds=kind or None, recognize=recognize)
    out_wl = overlap_workload(wl, overlap, mapping or None, params, produce_algorithm=produce)
    if not out_wl.name:  # the name in the GlobalMetadata marks the files as a workload for read_trace
        out_wl.name = f"{Path(src).name}-inlined"
    files = write_workload(out_wl, dst)
    before = (
        sum(1 for r in wl.ranks for n in r if int(n.type) == 7 or n.name.startswith("gloo:"))
        if recognize
        else sum(1 for r in wl.ranks for n in r if int(n.type) == 7)
    )
    after = sum(1 for r in out_wl.ranks for n in r if int(n.type) == 7)
    why = _nothing_inlined(wl, before - after, recognize, kind)
    if fmt == OutputFormat.json:
        emit_json(
            {
                "files": [str(f) for f in files],
                "inlined": before - after,
                "nodes": out_wl.node_count(),
                "nothing_inlined": why,
            }
        )
    else:
        out(
            f"wrote {len(files)} file(s): {dst}.0.et ... ({before - after} COMM_COLL nodes inlined, "
            f"{out_wl.node_count()} nodes)"
        )
    if why is not None:
        err(f"warning: nothing was inlined: {why[0]}")
        err(f"hint: {why[1]}")


def _nothing_inlined(wl: Any, inlined: int, recognize: bool, kinds: list[str]) -> tuple[str, str] | None:
    """Why ``trace inline`` inlined no collective (reason, hint), or None when it inlined some."""
    if inlined:
        return None
    colls = sum(1 for r in wl.ranks for n in r if int(n.type) == 7)
    gloo = sum(1 for r in wl.ranks for n in r if n.name.startswith("gloo:"))
    if colls == 0 and gloo and not recognize:
        return (
            f"the workload has no COMM_COLL node; its {gloo} gloo collective(s) are COMP nodes named gloo:*",
            "pass --recognize to turn them into collectives first",
        )
    if colls == 0:
        return ("the workload has no COMM_COLL node (and no gloo:* COMP node)", "there is nothing to inline")
    if kinds:
        return (
            f"none of its {colls} COMM_COLL node(s) is of kind {', '.join(kinds)}",
            "drop --kind, or name a kind the workload has (collhub trace show shows them)",
        )
    return (f"its {colls} COMM_COLL node(s) were kept", "see collhub trace show for their kinds")
