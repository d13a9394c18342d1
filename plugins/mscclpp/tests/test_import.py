"""Every shared plan imports (or is refused with the parser's reason and location); every correct
one verifies; the wrong ones are caught, located as GPU / thread block / op."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from collhub_mscclpp import PlanParams, parse_plan, plan_to_algorithm, read_plan
from collhub_mscclpp._components import produce_plan
from hub.chakra import Collective
from hub.errors import DeadlockError, ImportFormatError
from hub.verify import verify

from ._plans import REFUSED, TOO_MANY_OPS, WRONG, all_plans

PLANS = all_plans()
pytestmark = pytest.mark.skipif(not PLANS, reason="shared MSCCL++ plans not available")


def test_the_shared_data_is_all_there() -> None:
    assert len(PLANS) >= 113


@pytest.mark.parametrize("path", PLANS, ids=[p.name for p in PLANS])
def test_shared_plan(path: Path) -> None:
    if path.name in REFUSED:
        where, why = REFUSED[path.name]
        with pytest.raises(ImportFormatError) as e:
            read_plan(path)
        assert f"{path}: {where}: {why}" in str(e.value)
        return
    imp = read_plan(path)
    alg = imp.algorithm
    assert alg.ranks == len(imp.plan.gpus)
    rep = verify(alg, max_problems=5)
    if path.name in WRONG:
        assert not rep.ok
        assert WRONG[path.name] in str(rep.problems[0])
        assert rep.problems[0].origin and "/op" in rep.problems[0].origin  # tb<T>/op<I>/<op>
        return
    assert rep.ok, rep.summary()
    if imp.plan.collective in ("allreduce", "allgather", "reducescatter", "alltoall"):
        assert alg.collective is not Collective.CUSTOM
        assert rep.complete, rep.summary()  # the postcondition was proven
        assert not imp.problems, imp.problems
    if path.name in TOO_MANY_OPS:
        assert any(f.rejected for f in imp.limits)


def _params(path: Path, **kw: object) -> PlanParams:
    return PlanParams(path=path, **kw)  # type: ignore[arg-type]


def test_executor_limits_refuse_or_warn(caplog: pytest.LogCaptureFixture) -> None:
    path = next(p for p in PLANS if p.name == "alltoall_ring_n16.json.gz")
    with pytest.raises(ImportFormatError) as e:
        produce_plan(_params(path, verify=False), None)
    assert "GPU 0 thread block 0: Executor plan launching 95 operations" in str(e.value)
    with caplog.at_level(logging.WARNING):
        produce_plan(_params(path, verify=False, limits="warn"), None)
    assert "beyond the executor's capacities" in caplog.text
    nvls = next(p for p in PLANS if p.name == "allgather_nvls_zerocopy_i8_n64.json.gz")
    imp = read_plan(nvls)
    found = [str(f) for f in imp.limits]
    assert "GPU 0 thread block 0: 63 memory channels > 16" in found
    assert "GPU 0 thread block 0 op 1 (rlxsignal): 63 channel_ids > 8" in found
    with pytest.raises(ImportFormatError, match="GPU 0 thread block 0: 63 memory channels > 16"):
        produce_plan(_params(nvls, verify=False, limits="strict"), None)


def test_unit_fixtures_that_spin_are_located() -> None:
    path = next(p for p in PLANS if p.name == "unit_reduce_packets.json")
    with pytest.raises(DeadlockError) as e:
        produce_plan(_params(path, verify=True), None)
    p = e.value.problems[0]
    assert p.rank == 0 and "tb0/op0/repkt: reads packets" in p.message and "spins forever" in p.message


def _plan(gpus: list[dict[str, object]], **top: object) -> dict[str, object]:
    return {"name": "t", "collective": "allgather", "protocol": "Simple", "inplace": True, "gpus": gpus, **top}


def test_parser_rules() -> None:
    g = {
        "id": 1,
        "input_chunks": 1,
        "output_chunks": 2,
        "scratch_chunks": 0,
        "channels": [],
        "remote_buffers": [],
        "threadblocks": [],
    }
    with pytest.raises(ImportFormatError, match=r"x.json: gpus\[0\].id: GPU rank does not match"):
        parse_plan(_plan([g]), "x.json")
    g["id"] = 0
    g["threadblocks"] = [{"id": 1, "ops": [], "channels": []}]
    with pytest.raises(ImportFormatError, match="thread-block ids must be 0..n-1"):
        parse_plan(_plan([g]), "x.json")
    g["threadblocks"] = [
        {"id": 0, "ops": [{"name": "copy", "src_buff": [{"type": "q", "index": 0, "size": 1}]}], "channels": []}
    ]
    with pytest.raises(ImportFormatError, match=r"ops\[0\].src_buff\[0\].type: Invalid buffer type: q"):
        parse_plan(_plan([g]), "x.json")
    with pytest.raises(ImportFormatError, match="protocol: missing required key"):
        parse_plan({"name": "t", "collective": "allgather", "inplace": True, "gpus": [g]}, "x.json")


def test_size_window_and_alignment() -> None:
    path = next(p for p in PLANS if p.name == "allgather_nvls_pkt_n2.json")  # window 1K..1M
    with pytest.raises(ImportFormatError, match="outside the plan's window"):
        read_plan(path, size=4 << 20)
    with pytest.raises(ImportFormatError, match="not a multiple of buffer_alignment 16"):
        read_plan(path, size=1000 * 2 + 2)
    assert read_plan(path, size=64 << 10).algorithm.meta.size == 64 << 10


def test_top_level_fields_are_kept() -> None:
    path = next(p for p in PLANS if p.name == "allgather_nvls_pkt_n2.json")
    extra = dict(
        plan_to_algorithm(parse_plan(__import__("json").loads(path.read_text()), str(path))).algorithm.meta.extra
    )
    assert extra["os.meta.name"] == "allgather_nvls_zc_pkt_n2"
    assert extra["os.meta.protocol"] == "LL" and extra["os.meta.min_message_size"] == 1024
    assert extra["os.meta.use_double_scratch_buffer"] is True


def test_a_pipeline_that_unrolls_too_far_is_refused_before_it_is_built() -> None:
    copy = {
        "name": "copy",
        "src_buff": [{"type": "i", "index": 0, "size": 1}],
        "dst_buff": [{"type": "o", "index": 0, "size": 1}],
    }
    ops = [{"name": "pipeline", "iter_context": {"unit_size": 16, "num_chunks": 1}, "ops": [copy]}]
    g = {
        "id": 0,
        "input_chunks": 1,
        "output_chunks": 1,
        "scratch_chunks": 0,
        "channels": [],
        "remote_buffers": [],
        "threadblocks": [{"id": 0, "ops": ops, "channels": []}],
    }
    doc = {"name": "p", "collective": "allreduce", "protocol": "Simple", "inplace": False, "gpus": [g]}
    from hub.errors import UsageError

    with pytest.raises(UsageError, match="cut each chunk into 65536 pieces"):
        plan_to_algorithm(parse_plan(doc, "p.json"), size=1 << 20)  # 2^20 / 16 iterations
    assert plan_to_algorithm(parse_plan(doc, "p.json"), size=1 << 10).algorithm.meta.extra[0] == ("os.refine", 64)
