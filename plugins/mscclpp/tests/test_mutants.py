"""Mutants of correct shared plans are rejected: dropping a wait, swapping a put and its signal,
retargeting a put, shrinking a scratch buffer. Each mutant is generated here from the real plan
(every site of its kind, up to a cap per plan), imported and verified; a mutant counts as
rejected when the parser refuses it, the import finds a hang or a late write (located problems),
or hub.verify fails."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from collhub_mscclpp import parse_plan, plan_to_algorithm
from hub.errors import HubError
from hub.verify import verify

from ._plans import PLANS_DIR, load_json

#: correct plans covering memory puts, port puts, gets, reductions, pipelines, tbg, scratch
BASES = [
    "allgather_allpairs_put_n2.json",
    "alltoall_allpairs_n4.json",
    "upstream_exectests_reduce.json",
    "mn_allgather_port_2x2.json",
    "alltoall_pipeline_n2.json",
    "allgather_allpairs_put_tbg4_n2.json",
    "mn_reducescatter_port_2x4.json",
]
CAP = 6  # sites per mutation kind and plan


def _ops(plan: dict[str, Any]) -> Iterator[tuple[int, int, list[dict[str, Any]], int]]:
    for g in plan["gpus"]:
        for t, tb in enumerate(g["threadblocks"]):
            ops = tb["ops"]
            for i in range(len(ops)):
                yield g["id"], t, ops, i


def drop_wait(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    n = 0
    for gi, t, _ops_, i in list(_ops(plan)):
        if _ops_[i]["name"] == "wait" and n < CAP:
            m = copy.deepcopy(plan)
            del m["gpus"][gi]["threadblocks"][t]["ops"][i]
            n += 1
            yield m


def _owner(plan: dict[str, Any], gi: int, t: int, op: dict[str, Any]) -> int:
    g = plan["gpus"][gi]
    ty = op.get("channel_type", "memory")
    refs = [
        x
        for r in g["threadblocks"][t].get("remote_buffer_refs", [])
        if r["access_channel_type"] == ty
        for x in r["remote_buffer_ids"]
    ]
    return int(g["remote_buffers"][refs[op["dst_buff"][0]["buffer_id"]]]["rank"])


def _signal_peers(plan: dict[str, Any], gi: int, t: int, op: dict[str, Any]) -> set[int]:
    g = plan["gpus"][gi]
    ty = op.get("channel_type", "memory")
    table = [x for c in g["threadblocks"][t]["channels"] if c["channel_type"] == ty for x in c["channel_ids"]]
    peers = [p for c in g["channels"] if c["channel_type"] == ty for p in c.get("connected_to", [])]
    return {peers[table[c]] for c in op.get("channel_ids", [])}


def swap_put_signal(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Swap a put with the next signal towards the put's target (its signal)."""
    n = 0
    for gi, t, ops, i in list(_ops(plan)):
        if ops[i]["name"] == "put" and n < CAP:
            owner = _owner(plan, gi, t, ops[i])
            j = next(
                (
                    j
                    for j in range(i + 1, len(ops))
                    if ops[j]["name"] == "signal" and owner in _signal_peers(plan, gi, t, ops[j])
                ),
                None,
            )
            if j is None:
                continue
            m = copy.deepcopy(plan)
            mops = m["gpus"][gi]["threadblocks"][t]["ops"]
            mops[i], mops[j] = mops[j], mops[i]
            n += 1
            yield m


def retarget_put(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    n = 0
    for gi, t, ops, i in list(_ops(plan)):
        op = ops[i]
        if op["name"] in ("put", "pws", "pwsf") and n < CAP:
            g = plan["gpus"][gi]
            tb = g["threadblocks"][t]
            d = op["dst_buff"][0]
            ty = op.get("channel_type", "memory")
            refs = [
                x
                for r in tb.get("remote_buffer_refs", [])
                if r["access_channel_type"] == ty
                for x in r["remote_buffer_ids"]
            ]
            owner, btype = (
                g["remote_buffers"][refs[d["buffer_id"]]]["rank"],
                g["remote_buffers"][refs[d["buffer_id"]]]["type"],
            )
            og = plan["gpus"][owner]
            cap = {"i": og["input_chunks"], "o": og["output_chunks"], "s": og["scratch_chunks"]}[btype]
            if cap <= d["size"]:
                continue
            m = copy.deepcopy(plan)
            md = m["gpus"][gi]["threadblocks"][t]["ops"][i]["dst_buff"][0]
            md["index"] = (d["index"] + d["size"]) % (cap - d["size"] + 1)
            if md["index"] == d["index"]:
                continue
            n += 1
            yield m


def shrink_scratch(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for g in plan["gpus"][:CAP]:
        if g["scratch_chunks"] > 0:
            m = copy.deepcopy(plan)
            m["gpus"][g["id"]]["scratch_chunks"] -= 1
            yield m


MUTATIONS = {
    "drop_wait": drop_wait,
    "swap_put_signal": swap_put_signal,
    "retarget_put": retarget_put,
    "shrink_scratch": shrink_scratch,
}


def rejected(doc: dict[str, Any]) -> str | None:
    """Why the mutant is rejected, or None."""
    try:
        imp = plan_to_algorithm(parse_plan(doc, "mutant.json"))
    except HubError as e:
        return f"refused: {e}"
    if imp.problems:
        return f"import: {imp.problems[0]}"
    rep = verify(imp.algorithm, max_problems=1)
    return None if rep.ok else f"verify: {rep.problems[0]}"


def _cases() -> list[tuple[str, str]]:
    return [(b, k) for b in BASES for k in MUTATIONS]


@pytest.mark.skipif(not PLANS_DIR.is_dir(), reason="shared MSCCL++ plans not available")
@pytest.mark.parametrize(("base", "kind"), _cases(), ids=[f"{b}-{k}" for b, k in _cases()])
def test_mutants_are_rejected(base: str, kind: str) -> None:
    plan = load_json(PLANS_DIR / base)
    assert rejected(plan) is None, "the base plan itself must verify"
    tried = 0
    for mutant in MUTATIONS[kind](plan):
        tried += 1
        why = rejected(mutant)
        assert why is not None, f"{kind} mutant {tried} of {base} was not rejected"
    if tried == 0:
        pytest.skip(f"{base} has no site for {kind}")


def _pipeline_body(plan: dict[str, Any], name: str) -> tuple[list[dict[str, Any]], int]:
    for g in plan["gpus"]:
        for tb in g["threadblocks"]:
            for o in tb["ops"]:
                if o["name"] == "pipeline":
                    for i, b in enumerate(o["ops"]):
                        if b["name"] == name:
                            return o["ops"], i
    raise AssertionError(f"no {name} in a pipeline")


@pytest.mark.skipif(not PLANS_DIR.is_dir(), reason="shared MSCCL++ plans not available")
def test_semaphore_imbalance_and_barrier_shortfall_are_hangs() -> None:
    plan = load_json(PLANS_DIR / "alltoall_pipeline_n2.json")
    body, i = _pipeline_body(plan, "sem_release")
    del body[i]  # one release fewer: an acquire waits forever and the count is off at the end
    imp = plan_to_algorithm(parse_plan(plan, "m.json"))
    text = " | ".join(str(p) for p in imp.problems)
    assert "is never released: waits forever" in text and "ends the launch at" in text
    plan = load_json(PLANS_DIR / "allgather_allpairs_put_tbg4_n2.json")
    tb = plan["gpus"][0]["threadblocks"][1]
    tb["ops"] = [o for o in tb["ops"] if o["name"] != "barrier"]  # block 1 never arrives
    imp = plan_to_algorithm(parse_plan(plan, "m.json"))
    assert any("reached by 3 thread block(s) but waits for 4" in str(p) for p in imp.problems), imp.problems
    assert imp.problems[0].gpu == 0 and imp.problems[0].block is not None


def test_cyclic_waits_are_a_deadlock() -> None:
    """Each GPU waits for the other before it signals: hub.verify's progress level names both."""
    gpus = []
    for r in range(2):
        ops = [
            {"name": "wait", "channel_ids": [0], "channel_type": "memory"},
            {"name": "nop"},
            {"name": "signal", "channel_ids": [0], "channel_type": "memory"},
        ]
        gpus.append(
            {
                "id": r,
                "input_chunks": 1,
                "output_chunks": 1,
                "scratch_chunks": 0,
                "channels": [{"channel_type": "memory", "connected_to": [1 - r]}],
                "remote_buffers": [],
                "threadblocks": [{"id": 0, "ops": ops, "channels": [{"channel_type": "memory", "channel_ids": [0]}]}],
            }
        )
    doc = {"name": "cycle", "collective": "allreduce", "protocol": "Simple", "inplace": True, "gpus": gpus}
    rep = verify(plan_to_algorithm(parse_plan(doc, "cycle.json")).algorithm)
    assert not rep.ok and rep.problems[0].level == "progress"
    assert "tb0/op0/wait.recv" in str(rep.problems[0]) and "waits forever" in str(rep.problems[0])
