"""The boundary of the compiled event loop (hub/_native/_sim.c): what it refuses before walking,
and the table builders (hub/_native/_sim_prep.c) on small hand-written tables.

The walk's semantics are tested through hub.simulate against the real ASTRA-sim binaries
(tests/sim/test_oracle.py, benchmarks/bench_fidelity.py); here the argument contract and the
k-slot queue of native collective streams.
"""

from __future__ import annotations

import numpy as np
import pytest

from hub._native import _sim


def _args(n: int = 1, **over):  # noqa: ANN202 - a tuple of the 21 positional arguments
    """A valid call for ``n`` isolated no-op nodes plus the start node (which releases them)."""
    a = {
        "kind": np.zeros(n + 1, np.int8),
        "chan": np.full(n + 1, -1, np.int32),
        "dur": np.zeros(n + 1, np.int64),
        "chan_delay": np.zeros(0, np.int64),
        "succ_ptr": np.array([0] * (n + 1) + [n], np.int64),
        "succ_idx": np.arange(n, dtype=np.int32),
        "indeg": np.array([1] * n + [0], np.int32),
        "rank": np.zeros(n + 1, np.int32),
        "perm": np.arange(n, dtype=np.int32),
        "ids": np.arange(n, dtype=np.int64),
        "start": np.full(n + 1, -1, np.int64),
        "fin": np.full(n + 1, -1, np.int64),
        "cause": np.full(n + 1, -1, np.int32),
        "rank_finish": np.zeros(1, np.int64),
    }
    a.update(over)
    return (
        n,
        1,
        0,
        True,
        lambda r, keys: list(range(len(keys))),
        a["kind"],
        a["chan"],
        a["dur"],
        a["chan_delay"],
        a["succ_ptr"],
        a["succ_idx"],
        a["indeg"],
        a["rank"],
        a["perm"],
        a["ids"],
        None,
        None,
        a["start"],
        a["fin"],
        a["cause"],
        a["rank_finish"],
    ), a


def test_no_op_nodes_complete_at_time_zero_released_by_the_start_node():
    args, a = _args(3)
    last, posted, arrived, waiting, _t0 = _sim.run(*args)
    # the start node (3) completes first; the three it releases go in the callback's order (here 0, 1, 2)
    assert (last, posted, arrived, waiting) == (2, [], [], 0)
    assert a["fin"].tolist() == [0, 0, 0, 0] and a["cause"].tolist() == [3, 3, 3, -1]
    assert a["indeg"].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("column", "bad", "message"),
    [
        ("kind", np.zeros(2, np.int32), "kind: expected 2 items of 1 bytes"),  # wrong dtype
        ("chan", np.zeros(3, np.int32), "chan: expected 2 items of 4 bytes"),  # wrong length
        ("perm", np.zeros(1, np.int64), "perm: expected 1 items of 4 bytes"),
    ],
)
def test_wrong_columns_are_refused_by_name(column, bad, message):
    args, _ = _args(1, **{column: bad})
    with pytest.raises(ValueError, match=message):
        _sim.run(*args)


def test_outputs_must_be_writable():
    fin = np.full(2, -1, np.int64)
    fin.flags.writeable = False
    args, _ = _args(1, fin=fin)
    with pytest.raises((BufferError, ValueError, TypeError)):
        _sim.run(*args)


def test_an_error_in_the_order_callback_propagates():
    # one node releasing three: the issue order comes from the callback (hub.sim._engine.feeder in real runs)
    n = 4
    args, _ = _args(
        n,
        succ_ptr=np.array([0, 3, 3, 3, 3, 4], np.int64),
        succ_idx=np.array([1, 2, 3, 0], np.int32),
        indeg=np.array([1, 1, 1, 1, 0], np.int32),
    )
    args = (*args[:4], lambda r, keys: 1 / 0, *args[5:])
    with pytest.raises(ZeroDivisionError):
        _sim.run(*args)


def test_a_queue_class_holds_cap_nodes_and_hands_a_freed_slot_to_the_first_waiting():
    # three COMPs (10, 20, 30 ns) released together into one native queue (class 4) of 2 slots:
    # 0 and 1 start at once, 2 waits and takes the slot 0 frees at t = 10 (ends at 40)
    n = 3
    args, a = _args(n, kind=np.array([4, 4, 4, 0], np.int8), dur=np.array([10, 20, 30, 0], np.int64))
    q = np.array([4, 4, 4, 0], np.int8)
    cap = np.ones(16, np.int32)
    cap[4] = 2
    res = (q, q, np.zeros(n + 1, np.int8), cap)
    args = (*args[:3], False, *args[4:16], res, *args[17:])
    last, posted, arrived, waiting, _t0 = _sim.run(*args)
    assert (posted, arrived, waiting) == ([], [], 0)
    assert a["start"].tolist()[:3] == [0, 0, 10] and a["fin"].tolist()[:3] == [10, 20, 40]


# -- the table builders (hub/_native/_sim_prep.c); expected tables written out by hand ---------
def test_successors_are_the_transpose_with_children_ascending():
    # node 2 <- {0, 1}, node 3 <- {0}, node 1 <- {3} (a later node: forward)
    parents = np.array([3, 0, 1, 0], np.int32)
    indeg = np.array([0, 1, 2, 1], np.int32)
    sp, si = np.empty(5, np.int64), np.empty(4, np.int32)
    assert _sim.successors(parents, indeg, sp, si) is True
    assert sp.tolist() == [0, 2, 3, 3, 4] and si.tolist() == [2, 3, 2, 1]
    assert _sim.successors(np.array([0], np.int32), np.array([0, 1], np.int32), sp[:3], si[:1]) is False


def test_successors_refuse_a_parent_outside_the_nodes():
    with pytest.raises(ValueError, match="parents: entry 0 names node 7 of 2"):
        _sim.successors(
            np.array([7], np.int32), np.array([0, 1], np.int32), np.empty(3, np.int64), np.empty(1, np.int32)
        )


def test_channels_key_by_folded_tag_src_dst_size():
    send, recv, comp = 5, 6, 4
    # rank 0 sends tag 3 and tag 5e8+3 (the same channel once folded), then a different size;
    # rank 1 receives from 0 with tag 3; a COMP has no channel
    kind = np.array([send, send, send, recv, comp], np.int32)
    rank = np.array([0, 0, 0, 1, 1], np.int32)
    peer = np.array([1, 1, 1, 0, 0], np.int32)
    tagx = np.array([3, 500_000_003, 3, 3, 0], np.int64)
    size = np.array([8, 8, 16, 8, 0], np.int64)
    chan = np.empty(5, np.int32)
    nchan, first = _sim.channels(kind, rank, peer, tagx, size, chan)
    assert nchan == 2 and chan.tolist() == [0, 0, 1, 0, -1]
    assert np.frombuffer(first, np.int32).tolist() == [0, 2]


def test_layout_gathers_columns_and_renumbers_successors():
    # two ranks of two nodes (program 0,1 | 2,3), position-major engine order: 0, 2, 1, 3
    inv = np.array([0, 2, 1, 3], np.int32)
    kind = np.array([5, 4, 6, 4], np.int32)
    out = {
        "kind_e": np.empty(5, np.int8),
        "chan_e": np.empty(5, np.int32),
        "dur_e": np.zeros(5, np.int64),
        "rank_e": np.empty(5, np.int32),
        "indeg_e": np.empty(5, np.int32),
        "sp_e": np.empty(6, np.int64),
        "si_e": np.empty(4, np.int32),
    }
    _sim.layout(
        np.array([0, 2, 4], np.int64),
        inv,
        kind,
        np.array([0, -1, 0, -1], np.int32),
        np.array([0, 7, 0, 9], np.int64),
        np.array([0, 0, 1, 1], np.int32),
        np.array([0, 1, 1, 2, 2], np.int64),  # 0 -> 1, 2 -> 3
        np.array([1, 3], np.int32),
        np.array([0, 1, 0, 1], np.int32),
        np.array([0, 2], np.int64),  # roots in issue order
        *out.values(),
        False,
    )
    assert out["kind_e"].tolist() == [5, 6, 4, 4, 0]
    assert out["chan_e"].tolist() == [0, 0, -1, -1, -1]
    assert out["dur_e"].tolist() == [0, 0, 7, 9, 0]
    assert out["rank_e"].tolist() == [0, 1, 0, 1, 0]
    assert out["indeg_e"].tolist() == [1, 1, 1, 1, 0]  # the roots wait for the start node
    assert out["sp_e"].tolist() == [0, 1, 2, 2, 2, 4]
    assert out["si_e"].tolist() == [2, 3, 0, 1]


def test_layout_reverses_lists_of_two_in_the_feeders_order():
    # one rank: node 0 -> {1, 2}, node 1 -> {2}; with swap2 the two-list comes out newest first
    def run(swap2: bool) -> list[int]:
        si_e = np.empty(4, np.int32)
        _sim.layout(
            np.array([0, 3], np.int64),
            np.arange(3, dtype=np.int32),
            np.zeros(3, np.int32),
            np.full(3, -1, np.int32),
            np.zeros(3, np.int64),
            np.zeros(3, np.int32),
            np.array([0, 2, 3, 3], np.int64),
            np.array([1, 2, 2], np.int32),
            np.array([0, 1, 2], np.int32),
            np.array([0], np.int64),
            np.empty(4, np.int8),
            np.empty(4, np.int32),
            np.zeros(4, np.int64),
            np.empty(4, np.int32),
            np.empty(4, np.int32),
            np.empty(5, np.int64),
            si_e,
            swap2,
        )
        return si_e.tolist()

    assert run(False) == [1, 2, 2, 0]
    assert run(True) == [2, 1, 2, 0]  # the one-child list and the start node's list stay as they are


def test_layout_refuses_an_inverse_that_is_no_permutation():
    zeros = np.zeros(2, np.int32)
    with pytest.raises(ValueError, match="inv"):
        _sim.layout(
            np.array([0, 2], np.int64),
            np.array([0, 0], np.int32),
            zeros,
            np.full(2, -1, np.int32),
            np.zeros(2, np.int64),
            zeros,
            np.array([0, 1, 1], np.int64),
            np.array([1], np.int32),
            np.array([0, 1], np.int32),
            np.array([0], np.int64),
            np.empty(3, np.int8),
            np.empty(3, np.int32),
            np.zeros(3, np.int64),
            np.empty(3, np.int32),
            np.empty(3, np.int32),
            np.empty(4, np.int64),
            np.empty(2, np.int32),
            False,
        )
