"""The engine's quorum and gated joins and its sequencers (``Program.quorum``, ``Program.arm``,
``Program.seq``; ``gate()`` and ``tick()`` in hub/_native/_sim.c), on hand-computed timelines.
ASTRA-sim's native ``direct`` is built on them (its exactness against the binaries:
tests/sim/astrasim/test_algorithms.py).

Joins: one rank, four independent COMPs: b ends at 3 us, x at 4 (or 6) us, a at 5 us, c at 9 us;
q (1 us) depends on a, b, c (and x, when x arms it).
"""

from __future__ import annotations

import pytest

from hub.chakra import AlgorithmMeta, Collective, RankGraphBuilder, build_algorithm
from hub.errors import SimulationError
from hub.sim._engine.loop import run_engine
from hub.sim._engine.program import K_NOP, Program, program_from_algorithm


def _program(x_us: int) -> tuple[Program, dict[str, int]]:
    b = RankGraphBuilder(0)
    ids = {name: b.comp(duration_micros=us) for name, us in (("a", 5), ("b", 3), ("c", 9), ("x", x_us))}
    ids["q"] = b.comp(deps=[ids["a"], ids["b"], ids["c"], ids["x"]], duration_micros=1)
    prog = program_from_algorithm(build_algorithm(AlgorithmMeta(Collective.CUSTOM, 1, 1, 1), [b]))
    return prog, ids  # (one rank: program node = position = builder id)


def test_a_plain_join_waits_for_every_predecessor() -> None:
    prog, ids = _program(4)
    st = run_engine(prog)
    assert st.start[ids["q"]] == 9000 and st.cause[ids["q"]] == ids["c"]


@pytest.mark.parametrize(("need", "start", "cause"), [(1, 3000, "b"), (2, 4000, "x"), (3, 5000, "a")])
def test_a_quorum_is_released_by_the_kth_predecessor_to_finish(need: int, start: int, cause: str) -> None:
    prog, ids = _program(4)
    prog.quorum = {ids["q"]: need}
    st = run_engine(prog)
    assert (st.start[ids["q"]], st.cause[ids["q"]]) == (start, ids[cause])
    assert st.time_ns == 9000  # the later predecessors complete and release nothing more


@pytest.mark.parametrize(
    ("x_us", "need", "start", "cause"),
    [
        (4, 2, 5000, "a"),  # armed at 4 us, before the quorum (b, a): released at a's end
        (6, 2, 9000, "c"),  # the quorum (b, a) is met at 5 us, unarmed: the next count after 6 us
        (4, 1, 5000, "a"),  # the quorum (b) is met before the gate: the first count after it
    ],
)
def test_a_gated_quorum_is_released_by_the_first_count_after_its_gate(
    x_us: int, need: int, start: int, cause: str
) -> None:
    prog, ids = _program(x_us)
    prog.quorum = {ids["q"]: need}
    prog.arm = {ids["q"]: ids["x"]}
    st = run_engine(prog)
    assert (st.start[ids["q"]], st.cause[ids["q"]]) == (start, ids[cause])


def test_a_gate_that_arms_after_the_last_count_is_a_deadlock_naming_the_node() -> None:
    prog, ids = _program(10)  # x ends after c: no count completes once armed
    prog.quorum = {ids["q"]: 3}
    prog.arm = {ids["q"]: ids["x"]}
    with pytest.raises(SimulationError, match=rf"1 node\(s\) never became ready, e.g. rank 0 node {ids['q']}"):
        run_engine(prog)


def _sequenced(width: int, outs: int) -> tuple[Program, dict[str, int]]:
    """A no-op sequencer over a (5 us), b (3 us), c (9 us), then ``outs`` 1-us COMPs that depend
    on it; laid out as a workload is (successors in node order, not the feeder's)."""
    b = RankGraphBuilder(0)
    ids = {name: b.comp(duration_micros=us) for name, us in (("a", 5), ("b", 3), ("c", 9))}
    ids["s"] = b.comp(deps=[ids["a"], ids["b"], ids["c"]], duration_micros=0)
    for k in range(outs):
        ids[f"o{k}"] = b.comp(deps=[ids["s"]], duration_micros=1)
    prog = program_from_algorithm(build_algorithm(AlgorithmMeta(Collective.CUSTOM, 1, 1, 1), [b]))
    prog.kind[ids["s"]] = K_NOP  # (a sequencer does no work of its own)
    prog.acq, prog.rel = [0] * prog.n, [0] * prog.n  # (no resources: only the workload's layout)
    prog.seq = {ids["s"]: width}
    return prog, ids


@pytest.mark.parametrize(
    ("width", "starts", "causes"),
    [
        (1, [3000, 5000, 9000], "bac"),  # one successor per finish, in event order
        (2, [3000, 3000, 5000, 5000], "bbaa"),  # two per finish: the third finds none left
    ],
)
def test_a_sequencer_releases_its_kth_successors_at_its_kth_predecessor_to_finish(
    width: int, starts: list[int], causes: str
) -> None:
    prog, ids = _sequenced(width, len(starts))
    st = run_engine(prog)
    assert [st.start[ids[f"o{k}"]] for k in range(len(starts))] == starts
    # each is caused by the completion that ticked the sequencer, not by the sequencer itself
    assert [st.cause[ids[f"o{k}"]] for k in range(len(starts))] == [ids[c] for c in causes]
    assert (st.start[ids["s"]], st.fin[ids["s"]]) == (9000, 9000)  # done at its last tick


def test_a_successor_a_sequencer_never_reaches_is_a_deadlock_naming_it() -> None:
    prog, ids = _sequenced(1, 4)  # three predecessors, four successors
    with pytest.raises(SimulationError, match=rf"1 node\(s\) never became ready, e.g. rank 0 node {ids['o3']}"):
        run_engine(prog)
