"""Export: verified collhub algorithms become plans the parser accepts, within the executor's
limits, that re-import and verify; plan -> ET -> plan round trips keep the semantics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collhub_mscclpp import ExportParams, algorithm_to_plan, parse_plan, plan_to_algorithm, write_plan
from collhub_mscclpp._limits import check_limits
from hub.algorithms import direct, double_binary_tree, halving_doubling, ring
from hub.chakra import Algorithm, read_algorithm, write_algorithm
from hub.errors import ExportError
from hub.verify import verify

from ._plans import PLANS_DIR, load_json


def _back(plan: dict[str, object]) -> Algorithm:
    imp = plan_to_algorithm(parse_plan(plan, "exported.json"))
    assert not imp.problems, imp.problems[:3]
    assert not check_limits(imp.plan), check_limits(imp.plan)[:3]
    return imp.algorithm


CASES = [
    ("ring-allreduce-8", lambda: ring("allreduce", 8)),
    ("ring-allgather-6", lambda: ring("allgather", 6)),
    ("ring-reducescatter-4-oop", lambda: ring("reducescatter", 4, inplace=False)),
    ("direct-alltoall-4", lambda: direct("alltoall", 4)),
    ("hd-allreduce-8", lambda: halving_doubling("allreduce", 8)),
    ("dbt-allreduce-8", lambda: double_binary_tree("allreduce", 8)),
    ("ring-allreduce-64", lambda: ring("allreduce", 64)),
]


@pytest.mark.parametrize("protocol", ["Simple", "LL"])
@pytest.mark.parametrize(("label", "make"), CASES, ids=[c[0] for c in CASES])
def test_export_reimports_and_verifies(label: str, make: object, protocol: str) -> None:
    alg = make()  # type: ignore[operator]
    assert verify(alg).complete
    plan, stats = algorithm_to_plan(alg, protocol=protocol)
    assert stats.max_ops_per_block <= 64
    back = _back(json.loads(json.dumps(plan)))
    rep = verify(back)
    assert rep.complete, rep.summary()
    assert back.collective is alg.collective and back.ranks == alg.ranks
    if protocol == "Simple":  # signals balance per connection (else structure fails above)
        assert any(o["name"] == "signal" for g in plan["gpus"] for t in g["threadblocks"] for o in t["ops"])
    else:
        assert not any(
            o["name"] in ("signal", "wait") for g in plan["gpus"] for t in g["threadblocks"] for o in t["ops"]
        )


def test_port_channels_and_size_window(tmp_path: Path) -> None:
    out = tmp_path / "ring.json"
    params = ExportParams(out=out, channel="port", min_message_size=1024, max_message_size=1 << 20)
    write_plan(ring("allreduce", 4), out, params)
    plan = json.loads(out.read_text())
    assert plan["min_message_size"] == 1024 and plan["max_message_size"] == 1 << 20
    assert {o["name"] for g in plan["gpus"] for t in g["threadblocks"] for o in t["ops"]} >= {"pws", "wait"}
    assert verify(_back(plan)).complete


@pytest.mark.skipif(not PLANS_DIR.is_dir(), reason="shared MSCCL++ plans not available")
@pytest.mark.parametrize(
    "name",
    [
        "allgather_allpairs_put_n2.json",
        "allreduce_allpairs_pkt_n2.json",
        "allreduce_nvls_glres_n4.json",
        "mn_reducescatter_port_2x4.json",
        "alltoall_pipeline_n2.json",
        "allgather_nvls_pkt_n4.json",
    ],
)
def test_plan_et_plan_round_trip(name: str, tmp_path: Path) -> None:
    """plan -> Algorithm -> ET files -> Algorithm -> plan -> Algorithm: verified at both ends,
    the same collective, and the plan's own top-level fields restored."""
    doc = load_json(PLANS_DIR / name)
    first = plan_to_algorithm(parse_plan(doc, name)).algorithm
    write_algorithm(first, tmp_path / "p")
    again = read_algorithm(tmp_path / "p")
    plan, _ = algorithm_to_plan(again)
    for key in ("name", "collective", "protocol", "inplace", "min_message_size", "max_message_size"):
        assert plan[key] == doc.get(key, plan[key]), key
    back = _back(plan)
    assert verify(back).complete
    assert back.collective is first.collective


def test_unverifiable_input_is_refused() -> None:
    alg = ring("allreduce", 4)
    g = alg.graphs[0].copy()
    g.kind = g.kind.copy()
    g.kind[g.kind == 6] = 4  # RECVs of rank 0 become COMPs: SENDs without receivers
    bad = Algorithm(alg.meta, (g, *alg.graphs[1:]))
    with pytest.raises(ExportError, match="received"):
        algorithm_to_plan(bad)
