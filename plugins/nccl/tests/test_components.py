"""The producers through the plugin manager, and what consumes their output: the file set's
round trip, ``mscclang.export`` (MSCCL-IR) and ``astrasim.bundle`` (ASTRA-sim input sets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.chakra import read_algorithm, write_algorithm
from hub.plugins import RunContext, get_manager

CASES = [
    ("nccl.ring", {"collective": "allreduce", "ranks": 8, "size": "1MiB", "system": "ampere:1x8@nic=200G"}),
    ("nccl.tree", {"collective": "allreduce", "ranks": 16, "gpus_per_node": 8, "size": "2MiB", "protocol": "LL128"}),
    ("nccl.pat", {"collective": "reducescatter", "ranks": 8, "size": "1MiB", "system": "ampere:1x8@nic=200G"}),
    ("nccl.auto", {"collective": "allgather", "ranks": 8, "size": "256KiB", "system": "hopper:1x8@nic=400G"}),
]


@pytest.mark.parametrize(("producer", "params"), CASES, ids=[c[0] for c in CASES])
def test_produce_write_read_export_bundle(producer: str, params: dict[str, object], tmp_path: Path) -> None:
    mgr = get_manager()
    alg = mgr.run_producer(producer, params)
    assert dict(alg.meta.extra)["nccl_version"] == "2.30.7"
    prefix = tmp_path / "alg"
    write_algorithm(alg, str(prefix))
    back = read_algorithm(str(prefix))
    assert back.content_hash() == alg.content_hash()
    ctx = RunContext(workdir=tmp_path)
    # msccl-executor-nccl's limits (cnt < 72, offsets < 32768) are the runtime's, not NCCL's: a
    # fine-grained schedule may exceed them (the exporter then says so), so they are not enforced here
    mgr.run_consumer("mscclang.export", alg, {"out": str(tmp_path / "alg.xml"), "enforce_limits": False}, ctx)
    assert (tmp_path / "alg.xml").read_text().lstrip().startswith("<algo")
    mgr.run_consumer("astrasim.bundle", alg, {"network": f"switch:{alg.ranks}", "out": str(tmp_path / "b")}, ctx)
    assert (tmp_path / "b" / "run.sh").is_file()
