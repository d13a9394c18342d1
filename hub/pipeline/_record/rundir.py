"""The run directory: built in a temporary sibling and renamed into place, or kept marked incomplete.

Layout::

    <run>/pipeline.yaml                       the pipeline file as it was run
    <run>/rows.jsonl                          every row, appended as it came (with its content key)
    <run>/algorithms.jsonl                    every algorithm produced (key, hash, dir, summary)
    <run>/algorithms/<source>-<hash>/<name>.<rank>.et   each distinct algorithm, written once
    <run>/artifacts/<source>/<point>/<consumer>/...     what consumers wrote (details.json: Result.details)
    <run>/results.json  results.csv  results.md         written from rows.jsonl when the run completes
    <run>/INCOMPLETE                          only while a run is unfinished (interrupted)

A new run is built in ``.<name>.tmp-*``. When it completes it is renamed into place; an existing
target is never overwritten unless ``force`` (the run goes to ``<name>-2``, ... instead; with
``force`` the old directory is swapped out after the new one is complete). When it is
interrupted (Ctrl-C, SIGTERM) it is renamed into place all the same, holding the rows done so
far and the ``INCOMPLETE`` marker, and no results files: ``collhub run --resume`` completes it.
A run that fails is removed, as before.

A resumed run works in place: the marker is written first and removed last, so an interrupted
resume is again an incomplete run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from ...atomic import write_file
from ...errors import UsageError
from ...results._tables import (
    csv_text,
    markdown_text,
    metric_keys,
    table_columns,
    table_rows,
    warning_lines,
    write_results,
)
from .rowlog import LOG_NAME

__all__ = [
    "MARKER",
    "RunDir",
    "choose_target",
    "csv_text",
    "is_incomplete",
    "markdown_text",
    "metric_keys",
    "table_columns",
    "table_rows",
    "warning_lines",
    "write_results",
]

#: The file that marks an unfinished run directory.
MARKER = "INCOMPLETE"
_RESULTS = ("results.json", "results.csv", "results.md", "results.png")
#: the answer of a size sweep (:mod:`hub.results`), written with the results
_REPORT = ("report.json", "report.md", "report.png")


def choose_target(target: Path, *, force: bool) -> Path:
    """``target`` itself, or with ``force`` too; else the first free ``target-N`` (N >= 2)."""
    if force or not target.exists():
        return target
    n = 2
    while True:
        candidate = target.with_name(f"{target.name}-{n}")
        if not candidate.exists():
            return candidate
        n += 1


def is_incomplete(path: Path) -> bool:
    """True for a run directory left unfinished (it holds the ``INCOMPLETE`` marker)."""
    return (Path(path) / MARKER).is_file()


def _marker_text(resume_command: str) -> str:
    return (
        f"This run directory is incomplete: the run was interrupted.\n"
        f"rows.jsonl holds the rows done so far; complete it with:\n\n    {resume_command}\n"
    )


class RunDir:
    """A run directory under construction at :attr:`work`, published by :meth:`commit`.

    With ``resume`` and an existing run directory at ``target`` the run works in place
    (:attr:`resumed` is True); otherwise it is a new run in a temporary sibling."""

    def __init__(
        self,
        target: Path,
        *,
        force: bool = False,
        resume: bool = False,
        resume_command: str = "collhub run FILE --resume",
    ) -> None:
        target = Path(target).absolute()
        self.force = force
        self._note = resume_command
        self.resumed = resume and target.is_dir() and not target.is_symlink()
        if self.resumed:
            if not (target / LOG_NAME).is_file():
                raise UsageError(
                    f"{target} is not a resumable run directory (it has no {LOG_NAME})",
                    hint="resume a directory written by `collhub run`, or run without --resume",
                )
            self.final = self.work = target
            _write(target / MARKER, _marker_text(self.resume_hint()))
            for name in _RESULTS:  # stale until rewritten from the completed log
                (target / name).unlink(missing_ok=True)
            return
        self.final = choose_target(target, force=force)
        if self.final.is_symlink() or (self.final.exists() and not self.final.is_dir()):
            # --force replaces run directories only, never a user's file
            raise UsageError(
                f"{self.final} exists and is not a directory",
                hint="choose another --out; a file is never moved aside or replaced",
            )
        from ...atomic import make_dirs, output_errors

        make_dirs(self.final.parent)
        self.work = self.final.parent / f".{self.final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with output_errors(self.final):
            self.work.mkdir()

    def resume_hint(self) -> str:
        """The command that completes this run."""
        return f"{self._note} --out {self.final}"

    @property
    def tmp(self) -> Path:
        """Where the run is being written (the name of earlier versions)."""
        return self.work

    def commit(self) -> Path:
        """Publish the finished run: rename it into place (swapping out an old one with ``force``),
        or, for a resumed run, remove the marker."""
        if self.resumed:
            (self.work / MARKER).unlink(missing_ok=True)
            return self.final
        old: Path | None = None
        if self.final.exists():
            if not self.force:  # appeared while we ran: take the next free name
                self.final = choose_target(self.final, force=False)
            else:
                old = self.final.parent / f".{self.final.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(self.final, old)
        os.replace(self.work, self.final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.final

    def keep_incomplete(self) -> Path:
        """After an interrupt: mark the run incomplete and publish it where ``--resume`` finds it.

        An existing directory at the target (``--force`` over an earlier run) is kept: an
        unfinished run never replaces a finished one, it takes the next free name instead.
        Results files written before the interrupt are removed: they are rewritten from the row
        log when the run completes, and an incomplete directory must not look finished."""
        for name in (*_RESULTS, *_REPORT):
            (self.work / name).unlink(missing_ok=True)
        if self.resumed and not (self.work / MARKER).exists():
            _write(self.work / MARKER, _marker_text(self.resume_hint()))
        if not self.resumed:
            self.final = choose_target(self.final, force=False)
            _write(self.work / MARKER, _marker_text(self.resume_hint()))
            os.replace(self.work, self.final)
            self.work = self.final
        return self.final

    def discard(self) -> None:
        """After a failure: remove a new run's directory (a resumed one stays, incomplete)."""
        if not self.resumed:
            shutil.rmtree(self.work, ignore_errors=True)


def _write(path: Path, text: str) -> None:
    write_file(path, text)
