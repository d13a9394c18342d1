"""The answer of a sweep: the best algorithm at each size, per network and collective.

::

    from hub.report import answer, write_report, export_msccl
    from hub.pipeline._plot import load_document
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

from ._answer import FAR_FROM_BOUND, Answer, Best, Crossover, Segment, Study, answer, size_variable
from ._baseline import NcclBaseline, NcclCell
from ._export import ExportOutcome, export_msccl, export_mscclpp
from ._tuner import export_nccl_tuner
from ._write import (
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

__all__ = [
    "FAR_FROM_BOUND",
    "NCCL_HEADS",
    "Answer",
    "Best",
    "Crossover",
    "NcclBaseline",
    "NcclCell",
    "ExportOutcome",
    "Segment",
    "Study",
    "answer",
    "auto_report",
    "bound_cells",
    "export_msccl",
    "export_mscclpp",
    "export_nccl_tuner",
    "has_bound",
    "markdown",
    "nccl_rows",
    "size_variable",
    "summary_lines",
    "vs_nccl_cell",
    "write_report",
]
