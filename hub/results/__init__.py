"""A run's results, read back: the rows (:func:`load_document`), their tables and plots, and the
answer of a sweep (the best algorithm at each size, per network and collective) with its report
and exports to the runtimes.

``hub.pipeline`` writes a run and imports this package; nothing here imports the pipeline.

::

    from hub.results import answer, load_document, write_report, export_msccl
    ans = answer(load_document("runs/sweep")[0])
    for study in ans.studies:
        print(study.title, [(c.before, c.at, c.after) for c in study.crossovers])
    write_report("runs/sweep")                        # report.json, report.md, report.png
    export_msccl("runs/sweep", "msccl-out")           # the winners as MSCCL-IR + environment lines
    export_nccl_tuner("runs/sweep", "tuner-out")      # NCCL winners as NCCL's example tuner CSV

``collhub report RUN_DIR`` is the command line; every run that sweeps a size writes its report.
See ``docs/pipeline.md`` ("The answer").
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

#: public name -> the private module defining it, imported on first use (PEP 562): the runner's
#: tables do not bring the report, its exports or matplotlib
_LAZY: dict[str, str] = {
    "FAR_FROM_BOUND": "._answer",
    "Answer": "._answer",
    "Best": "._answer",
    "Crossover": "._answer",
    "Segment": "._answer",
    "Study": "._answer",
    "answer": "._answer",
    "size_variable": "._answer",
    "NcclBaseline": "._baseline",
    "NcclCell": "._baseline",
    "ExportOutcome": "._export",
    "export_msccl": "._export",
    "export_mscclpp": "._export",
    "Panel": "._plot",
    "PlotLayout": "._plot",
    "load_document": "._plot",
    "plot_layout": "._plot",
    "plot_results": "._plot",
    "NCCL_HEADS": "._report",
    "auto_report": "._report",
    "bound_cells": "._report",
    "has_bound": "._report",
    "markdown": "._report",
    "nccl_rows": "._report",
    "summary_lines": "._report",
    "vs_nccl_cell": "._report",
    "write_report": "._report",
    "export_nccl_tuner": "._tuner",
}

if _typing.TYPE_CHECKING:  # for type checkers; at run time __getattr__ imports on first use
    from ._answer import FAR_FROM_BOUND, Answer, Best, Crossover, Segment, Study, answer, size_variable
    from ._baseline import NcclBaseline, NcclCell
    from ._export import ExportOutcome, export_msccl, export_mscclpp
    from ._plot import Panel, PlotLayout, load_document, plot_layout, plot_results
    from ._report import (
        NCCL_HEADS,
        auto_report,
        bound_cells,
        has_bound,
        markdown,
        nccl_rows,
        summary_lines,
        vs_nccl_cell,
        write_report,
    )
    from ._tuner import export_nccl_tuner

__all__ = [
    "FAR_FROM_BOUND",
    "NCCL_HEADS",
    "Answer",
    "Best",
    "Crossover",
    "ExportOutcome",
    "NcclBaseline",
    "NcclCell",
    "Panel",
    "PlotLayout",
    "Segment",
    "Study",
    "answer",
    "auto_report",
    "bound_cells",
    "export_msccl",
    "export_mscclpp",
    "export_nccl_tuner",
    "has_bound",
    "load_document",
    "markdown",
    "nccl_rows",
    "plot_layout",
    "plot_results",
    "size_variable",
    "summary_lines",
    "vs_nccl_cell",
    "write_report",
]

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
