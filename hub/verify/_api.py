"""``verify`` and ``check``: run the levels in order and collect the findings."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..chakra import Algorithm, AlgorithmMeta, Collective
from ..errors import DeadlockError, SemanticsError, StructureError, UsageError, VerificationError
from ._fast import Slots, completes, data_too_large, fast_memory, single_contributors
from ._flat import Flat
from ._layout import has_buffer_semantics
from ._origin import with_origins
from ._progress import report_deadlock
from ._races import check_races
from ._report import DEFAULT_MAX_PROBLEMS, LEVELS, ProblemSink, VerificationReport, parse_level
from ._semantics import buffer_bases, check_postcondition, check_postcondition_slots, initial_memory
from ._structure import assume_structure, check_structure
from ._values import Codec
from ._walk import walk

__all__ = ["check", "verify"]

_ERRORS: dict[str, type[VerificationError]] = {
    "structure": StructureError,
    "progress": DeadlockError,
    "semantics": SemanticsError,
}
_HINTS = {
    "structure": "fix the listed nodes; `collhub verify --level structure` lists every finding",
    "progress": "a RECV waits for a SEND that can only run after it; reorder the dependencies",
    "semantics": "the algorithm runs but does not compute its collective; check chunk offsets and ops",
}


def verify(
    alg: Algorithm,
    *,
    level: str = "semantics",
    max_problems: int = DEFAULT_MAX_PROBLEMS,
    structure_proven: bool = False,
) -> VerificationReport:
    """Check ``alg`` up to ``level`` ("structure" < "progress" < "semantics", cumulative).

    Levels run in order and stop at the first one that finds problems, because the later ones
    presuppose it (a deadlock check needs matched messages, a data check needs progress). The
    semantics level lists races (see :mod:`._races`) before the data errors of the walk. The
    report keeps the first ``max_problems`` findings and counts all of them; what could not be
    checked, and why, is in ``report.not_checked``.

    ``structure_proven`` is a producer's guarantee, for an algorithm it has just built and checked
    while building it (``mscclang.ir`` does): every per-node fact of the structure level holds
    (distinct ids; valid dependencies, each on an earlier position; peers; chunk counts; RECV ops;
    buffer bounds; per connection as many SENDs as RECVs, pairwise equal in count and size). That
    level then checks the metadata only, and the later levels run as always. Never set it for an
    algorithm read from a file, or changed since it was built.
    """
    if not isinstance(alg, Algorithm):
        raise UsageError(
            f"verify needs an Algorithm, got {type(alg).__name__}",
            hint="workloads (COMM_COLL nodes) have no per-rank program to verify",
        )
    top = parse_level(level)
    rep = VerificationReport(algorithm=alg.meta.name, level=LEVELS[top])
    meta = alg.meta

    def failed(sink: ProblemSink) -> bool:
        rep.levels_checked.append(sink.level)
        if sink:
            rep.problems = with_origins(alg, sink.kept)
            rep.problem_count = sink.total
            return True
        return False

    sink = ProblemSink("structure", max_problems)
    f, orders = (assume_structure if structure_proven else check_structure)(alg, sink)
    if failed(sink) or top == 0 or f is None:
        return rep

    semantic = top >= 2 and meta.collective != Collective.CUSTOM and has_buffer_semantics(meta)
    if top >= 2 and meta.collective == Collective.CUSTOM:
        rep.not_checked["semantics"] = "collective is CUSTOM, there is no postcondition"
    elif top >= 2 and not semantic:
        rep.not_checked["semantics"] = (
            f"no buffer information (in_chunks={meta.in_chunks}, out_chunks={meta.out_chunks})"
        )

    psink = ProblemSink("progress", max_problems)
    dsink = ProblemSink("semantics", max_problems)
    order = np.concatenate(orders) if orders else np.zeros(0, np.int32)
    del orders  # one copy of the issue order, not two
    if semantic:
        codec = Codec(meta.in_chunks)
        base = buffer_bases(meta)
        races = _races(f, order, base, meta, max_problems)
        ids = single_contributors(f, meta)
        too_large = data_too_large(meta, ids)
        if too_large is not None:  # the races and the progress are checked, the data is not
            return _without_data(rep, f, order, races, psink, too_large, failed)
        fast = _fast_memory(f, meta, base, ids)
        if fast is not None:  # the C walk ran to completion without a data error
            failed(psink)
            return _semantics_tail(rep, meta, codec, fast, base, races, dsink, failed)
        mem, base = initial_memory(meta, codec)
        res = walk(f, mem=mem, base=base, codec=codec, sink=dsink)
    elif completes(f):  # the C walk without data: no deadlock, nothing to word
        failed(psink)
        return rep
    else:
        res = walk(f)
    if res.completed < f.n:
        report_deadlock(f, res, order, psink)
        if not psink:  # cannot happen with valid structure; keep the report honest anyway
            psink.add(f"{f.n - res.completed} node(s) never complete")
        if semantic:
            rep.not_checked["semantics"] = "the algorithm does not run to completion"
    if failed(psink) or not semantic:
        return rep
    return _semantics_tail(rep, meta, codec, mem, base, races, dsink, failed)


class _Races(NamedTuple):
    """The race analysis' findings, its notes (assumptions) and why it was skipped; the graph
    itself is dropped here, before the data walk allocates its memories."""

    sink: ProblemSink
    notes: list[str]
    skipped: str | None


def _races(f: Flat, order: np.ndarray, base: np.ndarray, meta: AlgorithmMeta, max_problems: int) -> _Races:
    rsink = ProblemSink("semantics", max_problems)
    notes, skipped = check_races(f, order, base, meta.in_chunks + meta.out_chunks + meta.scratch_chunks + 1, rsink)
    return _Races(rsink, notes, skipped)


def _without_data(
    rep: VerificationReport,
    f: Flat,
    order: np.ndarray,
    races: _Races,
    psink: ProblemSink,
    why: str,
    failed: Callable[[ProblemSink], bool],
) -> VerificationReport:
    """Progress by the walk without data, then the races; the data is reported as not checked."""
    if not completes(f):
        res = walk(f)
        report_deadlock(f, res, order, psink)
        if not psink:  # cannot happen with valid structure; keep the report honest anyway
            psink.add(f"{f.n - res.completed} node(s) never complete")
        rep.not_checked["semantics"] = "the algorithm does not run to completion"
        failed(psink)
        return rep
    failed(psink)
    rep.notes += races.notes
    if races.skipped:
        rep.not_checked["races"] = races.skipped
    rep.not_checked["data"] = why
    failed(races.sink)
    return rep


def _fast_memory(f: Flat, meta: AlgorithmMeta, base: np.ndarray, ids: bool = False) -> Slots | None:
    """The final memories by the C walk (see :mod:`._fast`), which runs the Python walk's schedule
    step for step; None sends the caller to the Python walk, which names data errors and
    deadlocks. Every schedule that the races allow computes the same memory, so this holds with
    or without races and assumed pairings (those are reported beside it, as before)."""
    return fast_memory(f, meta, base, ids)


def _semantics_tail(
    rep: VerificationReport,
    meta: AlgorithmMeta,
    codec: Codec,
    mem: list[list[int]] | Slots,
    base: np.ndarray,
    races: _Races,
    dsink: ProblemSink,
    failed: Callable[[ProblemSink], bool],
) -> VerificationReport:
    """Races first (they say the walk's one schedule does not stand for all), then the data."""
    rep.notes += races.notes
    if races.skipped:
        rep.not_checked["races"] = races.skipped
    if isinstance(mem, Slots):
        check_postcondition_slots(meta, codec, mem, base, dsink)
    else:
        check_postcondition(meta, codec, mem, base, dsink)
    failed(races.sink.merged(dsink))
    return rep


def check(alg: Algorithm, *, level: str = "semantics", strict: bool = False, structure_proven: bool = False) -> None:
    """Like :func:`verify`, but raise the matching :class:`~hub.errors.VerificationError`
    subclass (StructureError, DeadlockError or SemanticsError) carrying the problems.

    With ``strict``, a level that could not be checked (``report.not_checked``, e.g. the
    semantics of a CUSTOM collective) is an error too: a SemanticsError saying why.
    ``structure_proven``: as for :func:`verify`.
    """
    rep = verify(alg, level=level, structure_proven=structure_proven)
    if rep.ok and strict and rep.not_checked:
        lvl, why = next(iter(rep.not_checked.items()))
        raise SemanticsError(
            f"{rep.algorithm or 'algorithm'}: {lvl} not checked: {why}",
            hint=f"strict verification needs the {lvl} level proven; ask for a lower "
            "level, or set strict: false to accept it unproven",
        )
    if rep.ok:
        return
    lvl = rep.failed_level or "structure"
    raise _ERRORS[lvl](rep.summary(), problems=rep.problems, hint=_HINTS[lvl])
