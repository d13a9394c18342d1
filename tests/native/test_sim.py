"""The boundary of the compiled event loop (hub/_native/_sim.c): what it refuses before walking.

Its semantics are tested through hub.simulate against the real ASTRA-sim binaries
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
    last, posted, arrived, waiting = _sim.run(*args)
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
    # one node releasing three: the issue order comes from the callback (hub.sim._feeder in real runs)
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
    last, posted, arrived, waiting = _sim.run(*args)
    assert (posted, arrived, waiting) == ([], [], 0)
    assert a["start"].tolist()[:3] == [0, 0, 10] and a["fin"].tolist()[:3] == [10, 20, 40]
