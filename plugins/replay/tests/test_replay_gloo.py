"""Replays on gloo in real rank processes: every built-in algorithm of the four main
collectives at 2-4 ranks, an imported MSCCL-IR file, both buffer modes, sizes that do not divide
evenly, zero #wrong against the definition and against torch.distributed's own collective.

Spawning torch processes costs seconds, so each world size runs all its cases in one spawn.
"""

from __future__ import annotations

from typing import Any

import pytest

from collhub_replay import ReplayParams, replay
from hub.algorithms import CATALOG, make

from .replay_helpers import MSCCL_IR, children, wrong_ring

_MAIN = ("allreduce", "allgather", "reducescatter", "alltoall")


def _builtins(n: int, names: tuple[str, ...] = tuple(sorted(CATALOG))) -> list[Any]:
    """Every built-in algorithm (of ``names``) of the four main collectives that exists at n
    ranks, alternately built in place and out of place."""
    out = []
    for name in names:
        for coll in _MAIN:
            if coll not in CATALOG[name]:
                continue
            try:
                out.append(make(name, coll, n, inplace=len(out) % 2 == 0))
            except Exception:  # e.g. halving-doubling needs a power of two
                continue
    return out


def _params(sizes: list[int]) -> ReplayParams:
    return ReplayParams(size=sizes, iters=1, warmup=1, timeout=60, backend="gloo")


def _assert_right(rep: Any) -> None:
    for row in rep.rows:
        for key in ("oop_wrong", "ip_wrong", "native_wrong", "native_mismatch"):
            assert row[key] == 0, f"{rep.name} {rep.collective} size {row['size']}: {key}={row[key]}\n{rep.table}"
        assert row["oop_time_us"] > 0 and row["ip_time_us"] > 0 and row["native_time_us"] > 0


@pytest.fixture(scope="module")
def world4() -> tuple[list[Any], list[Any]]:
    from collhub_mscclang import read_msccl_ir

    algs = _builtins(4)
    algs.append(read_msccl_ir(MSCCL_IR / "mscclang_allreduce_ring_n4_ch1_i1_LL128.xml"))
    algs.append(read_msccl_ir(MSCCL_IR / "mscclang_allgather_ring_outofplace_n4.xml"))
    # 4012 B: 1003 floats per all-reduce rank (not a multiple of 4 ranks or chunks); all-gather
    # and friends round S down to whole elements per rank, as nccl-tests does
    return algs, replay(algs, _params([4012]))


def test_world4_every_builtin_and_msccl_ir(world4: tuple[list[Any], list[Any]]) -> None:
    algs, reps = world4
    covered = {(a.meta.producer, a.collective.value) for a in algs}
    for name in CATALOG:
        for coll in _MAIN:
            if (
                coll in CATALOG[name]
                and name != "double_binary_tree"
                or (name, coll) == ("double_binary_tree", "allreduce")
            ):
                assert (f"hub.{name}", coll) in covered, (name, coll)
    assert {a.meta.inplace for a in algs} == {True, False}
    for rep in reps:
        _assert_right(rep)
        assert rep.rows[0]["count"] % 4 != 0 or rep.collective != "allreduce"


def test_world4_table_is_nccl_tests_shaped(world4: tuple[list[Any], list[Any]]) -> None:
    rep = world4[1][0]
    lines = rep.table.splitlines()
    assert "out-of-place" in lines[2] and "in-place" in lines[2]
    assert lines[3].split()[1:6] == ["size", "count", "type", "redop", "root"]
    assert lines[3].count("#wrong") == 2
    body = [ln for ln in lines if not ln.startswith("#")]
    assert [ln.split()[-1] for ln in body] == ["replay", "native"]
    assert lines[-2] == "# Out of bounds values : 0 OK"


def test_world3_uneven() -> None:
    algs = _builtins(3, ("direct", "ring"))
    assert len(algs) == 8
    for rep in replay(algs, _params([3004, 40000])):
        _assert_right(rep)


_TYPED = [
    ("ring", "allreduce", "float16", "prod"),
    ("ring", "allreduce", "bfloat16", "max"),
    ("direct", "reducescatter", "int32", "min"),
    ("ring", "allgather", "float64", "sum"),
    ("halving_doubling", "allreduce", "int64", "sum"),
    ("double_binary_tree", "broadcast", "float32", "sum"),
    ("double_binary_tree", "reduce", "float32", "max"),
]


def test_world2_dtypes_ops_rooted_and_a_wrong_algorithm() -> None:
    from collhub_replay._consumer import _job
    from collhub_replay._launch import replay_jobs

    ring = make("ring", "allreduce", 2, inplace=False)
    algs = [ring, make("direct", "alltoall", 2), wrong_ring(ring, rank=1)]
    base = _params([1000])
    jobs = [_job(a, base) for a in algs]
    for name, coll, dtype, op in _TYPED:  # one spawn for all: jobs carry their own dtype and op
        jobs.append(
            _job(
                make(name, coll, 2, root=1) if coll in ("broadcast", "reduce") else make(name, coll, 2),
                base.model_copy(update={"dtype": dtype, "op": op}),
            )
        )
    backend, results = replay_jobs(jobs, ranks=None, backend="gloo", timeout=60)
    assert backend == "gloo"
    for job, rows in zip(jobs[3:], results[3:], strict=False):
        for row in rows:
            for key in ("oop_wrong", "ip_wrong", "native_wrong", "native_mismatch"):
                assert row[key] == 0, (job.plan.name, job.plan.collective, job.dtype, job.op, key, row[key])
    assert [r[0]["type"] for r in results[3:]] == [t[2] for t in _TYPED]
    from collhub_replay._consumer import ReplayReport
    from collhub_replay._table import format_table

    reps = [
        ReplayReport(
            j.plan.name,
            j.plan.collective,
            2,
            backend,
            j.plan.steps(),
            rows,
            format_table(j.plan.name, j.plan.collective, rows),
        )
        for j, rows in zip(jobs[:3], results[:3], strict=False)
    ]
    _assert_right(reps[0])
    _assert_right(reps[1])
    bad = reps[2].rows[0]
    assert bad["oop_wrong"] > 0 and bad["ip_wrong"] > 0
    assert bad["oop_wrong_per_rank"][1] > 0
    ((rank, chunk, elem),) = bad["oop_first_wrong"]
    assert rank in (0, 1) and 0 <= chunk < 2 and elem >= 0
    assert bad["native_wrong"] == 0 and bad["native_mismatch"] > 0
    assert "WRONG" in reps[2].table and f"rank {rank}, first in output chunk {chunk}" in reps[2].table
    assert "FAILED" in reps[2].table
    assert children() == []  # every rank process was reaped
