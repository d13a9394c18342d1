"""``collhub report RUN_DIR``: the best algorithm at each size, crossovers, "vs NCCL", plot, exports.

Exit codes: 0 done; 1 with ``--export`` when some winner could not be exported (the others are
written; ``export.json`` and stderr give each reason); 2 bad usage (no size variable in the run,
an unknown export kind or target, an existing output directory without ``--force``); 3 a results
file that cannot be read.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import ExitCode, UsageError
from ._output import OutputFormat, emit_json, err, out

__all__ = ["report_command"]

_EXPORT_HELP = (
    "Write the winners for a runtime: 'msccl DIR' writes MSCCL-IR files with minBytes/maxBytes set to "
    "each winner's size range, and msccl.env with the environment lines that load them; 'mscclpp DIR' writes "
    "MSCCL++ execution plans with min/max_message_size set to it; 'nccl-tuner DIR' writes the CSV of NCCL's "
    "example tuner plugin (nccl_tuner.conf per study) for the sizes an NCCL algorithm wins."
)
_KINDS = ("msccl", "mscclpp", "nccl-tuner")


def report_command(
    run_dir: Path = typer.Argument(
        ..., help="A run directory written by `collhub run` (or its results.json).", show_default=False
    ),
    fmt: OutputFormat = typer.Option(
        OutputFormat.table,
        "--format",
        "-f",
        case_sensitive=False,
        help="table: one table per network and collective; json: the report on stdout.",
    ),
    out_dir: Path | None = typer.Option(
        None, "--out", "-o", help="Write report.json/.md/.png here (default: the run directory)."
    ),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="Draw report.png (needs matplotlib)."),
    export: tuple[str, Path] | None = typer.Option(None, "--export", metavar="KIND DIR", help=_EXPORT_HELP),
    target: str = typer.Option(
        "msccl-executor-nccl", "--target", help="MSCCL runtime of --export: msccl-executor-nccl, rccl or msccl-legacy."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing --export directory."),
    allow_below_bound: bool = typer.Option(
        False,
        "--allow-below-bound",
        help="Let rows whose time is below a lower bound compete (marked 'below bound') and be exported. "
        "Without it they are set apart: such a time is impossible on the network, so it never wins.",
    ),
) -> None:
    """Per network and collective: the best algorithm at each size and the crossovers (report.json/.md/.png).

    A study with an nccl.auto source shows a "vs NCCL" column: NCCL's own pick at each size, its
    time, and its time over the best other contender's.

    Example: collhub report runs/sweep --export msccl winners/
    """
    from ..results import answer, load_document, write_report

    if export is not None and export[0] not in _KINDS:
        raise UsageError(f"--export {export[0]!r}: unknown kind", hint="the export kinds are: " + ", ".join(_KINDS))
    doc, _ = load_document(run_dir)
    ans = answer(doc, allow_below_bound=allow_below_bound)
    source = run_dir if run_dir.is_dir() else run_dir.parent
    from ._progress import working

    try:
        with working(f"writing the report of {run_dir}", json_output=fmt == OutputFormat.json):
            written = write_report(source, out_dir, plot=plot, allow_below_bound=allow_below_bound)
    except OSError as exc:  # e.g. a read-only run directory
        raise UsageError(
            f"cannot write the report into {out_dir or source}: {exc.strerror or exc}",
            hint="pass --out DIR to write it elsewhere",
        ) from None
    outcome = None
    if export is not None:
        from ..results import export_msccl, export_mscclpp, export_nccl_tuner

        with working(f"exporting the winners to {export[1]}", json_output=fmt == OutputFormat.json):
            if export[0] == "nccl-tuner":
                outcome = export_nccl_tuner(
                    run_dir, export[1], force=force, ans=ans, allow_below_bound=allow_below_bound
                )
            elif export[0] == "mscclpp":
                outcome = export_mscclpp(run_dir, export[1], force=force, ans=ans, allow_below_bound=allow_below_bound)
            else:
                outcome = export_msccl(
                    run_dir, export[1], target=target, force=force, ans=ans, allow_below_bound=allow_below_bound
                )
    if fmt == OutputFormat.json:
        emit_json(
            {
                **ans.as_dict(),
                "files": {k: str(v) for k, v in written.items()},
                "export": outcome.as_dict() if outcome is not None else None,
            }
        )
    else:
        _print_tables(ans)
        out("wrote " + ", ".join(str(p) for p in written.values()))
        if outcome is not None:
            _print_export(outcome)
    if outcome is not None and outcome.not_exported:
        for e in outcome.not_exported:
            err(f"error: {e['source']} ({e['min_bytes']}..{e['max_bytes']} B) was not exported: {e['reason']}")
        where = f"the other winners are in {outcome.out_dir}; " if outcome.exported else ""
        err(f"hint: {where}{outcome.out_dir / 'export.json'} lists every winner, with the reason for each one left out")
        raise typer.Exit(ExitCode.RUN_FAILED)


def _print_tables(ans: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    from .._units import format_size
    from ..results import NCCL_HEADS, bound_cells, has_bound, nccl_rows, summary_lines, vs_nccl_cell

    vs = any(st.nccl is not None for st in ans.studies)
    console = Console(width=None if sys.stdout.isatty() else (140 if vs else 110))
    right = ("size", "time (µs)", "busbw (GB/s)", "% of bound", "× faster")
    for st in ans.studies:
        bounded = has_bound(st)
        table = Table(title=st.title, title_justify="left")
        heads: tuple[str, ...] = ("size", "winner", "time (µs)", "busbw (GB/s)")
        heads += ("% of bound", "bound term") if bounded else ()
        for h in (*heads, "runner-up", "× faster"):
            table.add_column(h, justify="right" if h in right else "left", no_wrap=True)
        if st.nccl is not None:  # NCCL's pick and its time / the best other contender's
            table.add_column("vs NCCL", justify="left", no_wrap=True)
        for b in st.best:
            winner = b.source + (" (below bound)" if b.below_bound else "")
            winner += " (sub-optimal)" if b.far_from_bound else ""
            table.add_row(
                format_size(b.size_bytes),
                winner,
                f"{b.time_us:.3f}",
                f"{b.busbw_GBps:.3f}" if b.busbw_GBps is not None else "-",
                *(bound_cells(b) if bounded else ()),
                b.runner_up or "-",
                f"{b.margin:.2f}" if b.margin is not None else "-",
                *((vs_nccl_cell(st, b.size_bytes),) if st.nccl is not None else ()),
            )
        console.print(table)
        for line in summary_lines(st):
            out(f"  {line}")
        if st.nccl is not None:
            detail = Table(
                title=f"vs NCCL: {st.nccl.source} = NCCL's own pick for {st.nccl.system}", title_justify="left"
            )
            for h in NCCL_HEADS:
                detail.add_column(h, justify="right" if "µs" in h or "÷" in h or h == "size" else "left")
            for row in nccl_rows(st):
                detail.add_row(*row)
            console.print(detail)
        if st.set_apart:
            apart = Table(title="set apart: below a lower bound (impossible on this network)", title_justify="left")
            for h in ("size", "source", "time (µs)", "why"):
                apart.add_column(h, justify="right" if h in ("size", "time (µs)") else "left")
            for src, size, t, why in st.set_apart:
                apart.add_row(format_size(size), src, f"{t:.3f}", why)
            console.print(apart)


def _print_export(outcome: Any) -> None:
    for st in outcome.studies:
        out(f"{st['title']}:")
        # nccl-tuner also lists the winners its tuner cannot steer (left_out), in size order
        for e in sorted([*st["exported"], *st.get("left_out", ())], key=lambda e: e["min_bytes"]):
            where = e.get("file") or (
                f"{e['line']['algorithm']}/{e['line']['protocol']}" if "line" in e else f"left out: {e['reason']}"
            )
            out(f"  {e['source']:<20} {e['min_bytes']:>12}..{e['max_bytes']:<12} {where}")
        if st.get("file"):
            out(f"  tuner configuration: {st['file']}")
        if st["env"]:
            out(f"  environment: {st['env']}")
    out(f"exported {len(outcome.exported)} winner(s) for {outcome.target} to {outcome.out_dir}")
