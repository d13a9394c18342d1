"""``collhub pipeline validate|schema|graph|plot`` and ``collhub run FILE``.

``app`` is the ``pipeline`` command group; :func:`run_command` is mounted as ``collhub run``.
Errors are raised as :class:`hub.errors.HubError` and printed by the root app's one handler,
except ``validate``, whose product *is* the list of issues (stdout, one per line, exit 3).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from ..errors import ExitCode, PipelineValidationError
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out

__all__ = ["app", "run_command", "graph_text"]

app = typer.Typer(
    help="Validate, inspect and graph pipeline files.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FILE_ARG = typer.Argument(..., help="The pipeline file (YAML).", show_default=False)


class ExecutorKind(StrEnum):
    """``collhub run --executor`` choices (see hub.pipeline._run.executors.EXECUTORS)."""

    local = "local"
    dask = "dask"


class GraphFormat(StrEnum):
    """``collhub pipeline graph --format`` choices."""

    mermaid = "mermaid"
    dot = "dot"
    text = "text"
    json = "json"  # the graph as a document: nodes, edges, matrix counts


def _debug() -> bool:
    try:
        from ._errors import debug_enabled

        return debug_enabled()
    except ImportError:  # pragma: no cover - the root app is always there in a release
        return False


@app.command("validate")
def validate_command(
    file: Path = FILE_ARG,
    format: OutputFormat = typer.Option(
        OutputFormat.table,
        "--format",
        "-f",
        case_sensitive=False,
        help="table: one issue per line; json: an object on stdout.",
    ),
) -> None:
    """Check a pipeline file (structure, components, params at every matrix point); exit 3 on issues.

    Example: collhub pipeline validate examples/compare-allreduce.yaml
    """
    from ..pipeline import validate_pipeline

    try:
        vp = validate_pipeline(file)
    except PipelineValidationError as exc:
        if format == OutputFormat.json:
            emit_json({"file": str(file), "valid": False, "issues": [_issue_dict(i) for i in exc.issues]})
        else:
            for issue in exc.issues:
                out(" ".join(str(issue).split()))
            err(f"error: {len(exc.issues)} issue(s) in {file}")
            first = next((i.hint for i in exc.issues if i.hint), None)
            err(f"hint: {' '.join((first or 'fix each issue at its file:line:column').split())}")
        raise typer.Exit(ExitCode.VALIDATION) from None
    model = vp.model
    runs = _row_count(vp)
    if format == OutputFormat.json:
        emit_json(
            {
                "file": str(file),
                "valid": True,
                "issues": [],
                "sources": list(model.sources),
                "consumers": list(model.consumers),
                "points": len(vp.points),
                "rows": runs,
            }
        )
    else:
        out(
            f"{file}: ok ({len(model.sources)} source(s) x {len(vp.points)} point(s) x "
            f"{len(model.consumers)} consumer(s) = {runs} row(s))"
        )


def _issue_dict(issue: Any) -> dict[str, Any]:
    return {
        "file": issue.file,
        "line": issue.line,
        "column": issue.column,
        "path": issue.path,
        "message": issue.message,
        "hint": issue.hint,
    }


def _row_count(vp: Any) -> int:
    model = vp.model
    total = 0
    for s in model.sources:
        n = sum(1 for c in model.consumers.values() if c.sources is None or s in c.sources)
        total += len(vp.points) * max(1, n)
    return total


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of pipeline files.

    Example: collhub pipeline schema > pipeline.schema.json
    """
    from ..pipeline import json_schema

    out(json.dumps(json_schema(), indent=2))


def _graph_parts(model: Any) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The pipeline's nodes (id, label, kind) and edges (from, to), for every rendering."""
    # Positional node ids (s0, s0t1, c2): step names may hold characters graph languages reject.
    nodes: list[tuple[str, str, str]] = []  # (id, label, kind)
    edges: list[tuple[str, str]] = []
    cons_id = {cname: f"c{k}" for k, cname in enumerate(model.consumers)}
    for i, (sname, src) in enumerate(model.sources.items()):
        prev = f"s{i}"
        nodes.append((prev, f"{sname}: {src.producer}", "producer"))
        for j, t in enumerate(src.transforms):
            nid = f"s{i}t{j}"
            nodes.append((nid, t.use, "transform"))
            edges.append((prev, nid))
            prev = nid
        for cname, cons in model.consumers.items():
            if cons.sources is None or sname in cons.sources:
                edges.append((prev, cons_id[cname]))
    for cname, cons in model.consumers.items():
        nodes.append((cons_id[cname], f"{cname}: {cons.use}", "consumer"))
    return nodes, edges


def _matrix_counts(model: Any) -> dict[str, Any]:
    """Points per matrix variable ('?' for a range pass 1 cannot count)."""
    from .._ranges import is_range, range_count

    def count(name: str, v: Any) -> Any:
        try:
            return range_count(name, v) if is_range(v) else len(v)
        except Exception:  # noqa: BLE001 - graph reads pass 1 only; a bad range shows as '?'
            return "?"

    return {k: count(k, v) for k, v in (model.matrix or {}).items()}


def graph_document(model: Any) -> dict[str, Any]:
    """``pipeline graph --format json``: the graph's nodes, edges and matrix as one object."""
    nodes, edges = _graph_parts(model)
    return {
        "nodes": [{"id": nid, "label": label, "kind": k} for nid, label, k in nodes],
        "edges": [{"from": a, "to": b} for a, b in edges],
        "matrix": _matrix_counts(model),
    }


def graph_text(model: Any, fmt: str) -> str:
    """Render sources -> transforms -> consumers as Mermaid, Graphviz DOT or indented text."""
    nodes, edges = _graph_parts(model)
    if fmt == "mermaid":
        shape = {"producer": ('(["', '"])'), "transform": ('["', '"]'), "consumer": ('[["', '"]]')}
        lines = ["flowchart LR"]
        lines += [f"  {nid}{shape[k][0]}{label.replace(chr(34), '#quot;')}{shape[k][1]}" for nid, label, k in nodes]
        lines += [f"  {a} --> {b}" for a, b in edges]
        return "\n".join(lines)
    if fmt == "dot":
        dot_shape = {"producer": "ellipse", "transform": "box", "consumer": "box3d"}
        lines = ["digraph pipeline {", "  rankdir=LR;"]
        lines += [f"  {nid} [label={json.dumps(label)}, shape={dot_shape[k]}];" for nid, label, k in nodes]
        lines += [f"  {a} -> {b};" for a, b in edges]
        return "\n".join(lines + ["}"])
    lines = []
    for sname, src in model.sources.items():
        chain = [f"{sname} ({src.producer})", *(t.use for t in src.transforms)]
        targets = [
            f"{c} ({cons.use})" for c, cons in model.consumers.items() if cons.sources is None or sname in cons.sources
        ]
        lines.append(" -> ".join(chain) + (" -> " + ", ".join(targets) if targets else ""))
    if model.matrix:
        lines.append("matrix: " + " x ".join(f"{k}[{n}]" for k, n in _matrix_counts(model).items()))
    return "\n".join(lines)


@app.command("graph")
def graph_command(
    file: Path = FILE_ARG,
    format: GraphFormat = typer.Option(
        GraphFormat.mermaid,
        "--format",
        "-f",
        case_sensitive=False,
        help="mermaid, dot (Graphviz), text, or json (nodes, edges and matrix as one object).",
    ),
) -> None:
    """Print the pipeline's graph: sources -> transforms -> consumers.

    Example: collhub pipeline graph examples/compare-allreduce.yaml --format mermaid
    """
    from ..pipeline import load_pipeline

    model = load_pipeline(file)
    if format == GraphFormat.json:
        emit_json({"file": str(file), **graph_document(model)})
    else:
        out(graph_text(model, format.value))


def run_command(
    file: Path = FILE_ARG,
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,  # noqa: UP007 - Typer needs Optional
        help="Worker processes (default: CPU count; 1 runs serially).",
    ),
    out_dir: str | None = typer.Option(
        None,
        "--out",
        "-o",  # noqa: UP007 - str: '' must stay visible
        help="Run directory (default: the file's output:, else runs/<name>).",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace an existing run directory instead of adding -2, -3, ..."
    ),
    format: OutputFormat = typer.Option(
        OutputFormat.table,
        "--format",
        "-f",
        case_sensitive=False,
        help="table: results table on stdout; json: the results document.",
    ),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        min=0.001,  # noqa: UP007
        help="Seconds before a component call is stopped (steps may set their own timeout:).",
    ),
    executor: ExecutorKind = typer.Option(
        ExecutorKind.local,
        "--executor",
        case_sensitive=False,
        help="local: worker processes here; dask: a Dask cluster (pip install 'collhub[dask]').",
    ),
    scheduler: str | None = typer.Option(
        None,
        "--scheduler",
        metavar="ADDR",  # noqa: UP007
        help="With --executor dask: the scheduler to use, tcp://HOST:PORT "
        "(default: $COLLHUB_DASK_SCHEDULER, else a local cluster of --jobs "
        "workers).",
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Complete the run directory at --out: reuse its rows, compute the missing "
        "and changed ones (--resume=strict: refuse when a row changed).",
    ),
    resume_strict: bool = typer.Option(
        False, "--resume-strict", hidden=True, help="The spelling --resume=strict arrives as."
    ),
) -> None:
    """Run a pipeline: every source x matrix point x consumer; write the run directory.

    Ctrl-C or SIGTERM at any moment stops the workers and leaves the rows done so far in the run
    directory, marked INCOMPLETE (exit 130); `collhub run FILE --resume` completes it.

    Example: collhub run examples/compare-allreduce.yaml --jobs 2 --out runs/demo"""
    from ..pipeline import execute, validate_pipeline
    from ..pipeline._run import interrupt as _interrupt
    from ._errors import STATE

    _check_run_options(out_dir, executor, scheduler)  # before validating: a usage error is cheap
    _interrupt.EXIT_AFTER_INTERRUPT = STATE.process  # the real collhub process exits after the run
    with _interrupt.Interrupts():
        vp = validate_pipeline(file)
        progress = sys.stderr.isatty() and format != OutputFormat.json
        mode = "strict" if resume_strict else "auto" if resume else None
        result = execute(
            vp,
            None if out_dir is None else Path(out_dir),
            jobs=jobs,
            force=force,
            progress=progress,
            debug=_debug(),
            timeout=timeout,
            resume=mode,
            executor=executor.value,
            scheduler=scheduler,
        )
    if result.reuse is not None:
        _say_reuse(result.reuse)
    if format == OutputFormat.json:
        emit_json(result.document)
        return
    _say_run(result, vp)


def _check_run_options(out_dir: str | None, executor: ExecutorKind, scheduler: str | None) -> None:
    """The option combinations ``collhub run`` refuses, as usage errors."""
    from ..errors import UsageError

    if out_dir is not None and not out_dir.strip():
        raise UsageError("--out is empty", hint="give a run directory, e.g. --out runs/sweep")
    if scheduler is not None and executor != ExecutorKind.dask:
        raise UsageError("--scheduler needs --executor dask", hint="add --executor dask, or drop --scheduler")


def _say_run(result: Any, vp: Any) -> None:
    """A finished run in table form: the results table on stdout; warnings, the row count and
    the files written on stderr."""
    from ..pipeline._record.rundir import warning_lines
    from ._runtable import print_run_table

    print_run_table(result.iter_rows, list(vp.model.matrix), vp.name)
    for w in warning_lines(result.iter_rows()):
        err(f"warning: {w}")
    total = failed = 0
    for r in result.iter_rows():
        total += 1
        failed += r["status"] != "ok"
    err(f"{total} row(s){f', {failed} failed' if failed else ''}; run directory: {result.run_dir}")
    if result.plot is not None:
        err(f"plot: {result.plot}")
    if (result.run_dir / "report.md").is_file():  # a size sweep: the runner wrote the answer
        err(f"report: {result.run_dir / 'report.md'} (collhub report {result.run_dir})")


def _say_reuse(reuse: Any) -> None:
    """What a resume reused and recomputed, on stderr."""
    parts = [f"resumed: {reuse.reusable} row(s) reused"]
    if reuse.changed:
        more = f"; and {len(reuse.changed) - 5} more" if len(reuse.changed) > 5 else ""
        shown = "; ".join(reuse.changed[:5]) + more
        parts.append(f"{len(reuse.changed)} changed and recomputed ({shown})")
    if reuse.failed:
        parts.append(f"{reuse.failed} failed before and recomputed")
    if reuse.dropped:
        parts.append(f"{reuse.dropped} no longer in the pipeline")
    err(", ".join(parts))


@app.command("plot")
def plot_command(
    run_dir: Path = typer.Argument(
        ..., help="A run directory (or its results.json).", show_default=False, metavar="RUN_DIR"
    ),
    metric: str = typer.Option(
        "busbw_GBps", "--metric", "-m", help="Metric on the y axis: busbw_GBps, algbw_GBps, time_us, ..."
    ),
    x: str | None = typer.Option(
        None,
        "--x",  # noqa: UP007
        help="Matrix variable on the x axis (default: size, else the first numeric).",
    ),
    panel: list[str] | None = typer.Option(
        None,
        "--panel",  # noqa: UP007
        help="Variable with one subplot per value (repeatable; "
        "default: every other varying variable; 'none': one panel).",
    ),
    out_file: Path | None = typer.Option(
        None,
        "--out",
        "-o",  # noqa: UP007
        help="PNG to write (default: RUN_DIR/results.png for busbw_GBps, else RUN_DIR/results-METRIC.png).",
    ),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Plot a run's results: METRIC against a swept size, one line per source, one panel per network.

    Example: collhub pipeline plot runs/compare-allreduce --metric time_us
    """
    from ..pipeline import plot_results

    if out_file is None:
        base = run_dir.parent if run_dir.is_file() else run_dir
        out_file = base / ("results.png" if metric == "busbw_GBps" else f"results-{metric}.png")
    panels: list[str] | None = None if not panel else [] if panel == ["none"] else panel
    path = plot_results(run_dir, out_file, metric=metric, x=x, panel=panels)
    if fmt == OutputFormat.json:
        emit_json({"written": str(path), "format": "png", "metric": metric, "x": x, "panel": panels})
    else:
        out(str(path))
