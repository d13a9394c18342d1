"""Where NCCL's own printed data lives (``../shared/data/nccl``), read once per session."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
NCCL_DATA = REPO.parent / "shared" / "data" / "nccl"


def _need() -> Path:
    if not NCCL_DATA.is_dir():
        pytest.skip(f"shared NCCL data not found at {NCCL_DATA}")
    return NCCL_DATA


def jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="session")
def nccl_data() -> Path:
    return _need()


@pytest.fixture(scope="session")
def models(nccl_data: Path) -> list[dict[str, Any]]:
    return jsonl(nccl_data / "tuning" / "model.jsonl.gz")


@pytest.fixture(scope="session")
def selections(nccl_data: Path) -> list[dict[str, Any]]:
    return jsonl(nccl_data / "tuning" / "select.jsonl.gz")


@pytest.fixture(scope="session")
def dtree_rows(nccl_data: Path) -> list[dict[str, str]]:
    with gzip.open(nccl_data / "trees" / "dtree.csv.gz", "rb") as f:
        return list(csv.DictReader(io.TextIOWrapper(f)))


def system_of(label: str) -> Any:
    """The system a shared label (``hopper_8gpu_400G_x4``) describes, as a user writes it."""
    from collhub_nccl._system import parse_system

    arch, gpus, nic, nodes = label.split("_")
    return parse_system(f"{arch}:{gpus.removesuffix('gpu')}x{nodes.removeprefix('x')}@nic={nic}")
