"""The shared MSCCL++ plans (``../shared/data/mscclpp/plans``, upstream microsoft/mscclpp at
1f5f065, MIT) and what the tests expect of each."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.conftest import SHARED_DATA

PLANS_DIR = SHARED_DATA / "mscclpp" / "plans"

#: refused by the executor's parser, with the JSON path of the reason
REFUSED = {
    "unit_switch_reduce.json": ("gpus[0].threadblocks[0].ops[0].name", "Invalid operation type: glre"),
    "upstream_execfiles_allreduce_pipeline_legacy.json": ("gpus[0].channels[0].buffer_type", "missing required key"),
}
#: refused by the executor at launch (more than 64 ops in a block); import with limits=warn
TOO_MANY_OPS = {"alltoall_ring_n16.json.gz"}
#: wrong, and how the verification says so
WRONG = {
    # balanced per rank pair, not per connection (reference §13.4): hangs on the GPU
    "unit_signal_wait_fuse.json": "unmatched SEND",
    # tbg slice 0 of gpu 0 reads gpu 1's scratch chunk 1 (first half) through a get after waiting
    # only for gpu 1's block 0, but gpu 1's block 1 writes that chunk (copy i[0:2] -> s[0:2], slice 1)
    # and signals on the other connection: no barrier orders the two blocks
    "upstream_exectests_reduce_tbg.json": "race on scratch chunk",
}


def all_plans() -> list[Path]:
    if not PLANS_DIR.is_dir():
        return []
    return sorted(
        p for p in PLANS_DIR.iterdir() if p.name.endswith((".json", ".json.gz")) and p.name != "manifest.json"
    )


def load_json(path: Path) -> Any:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)
