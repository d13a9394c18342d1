"""Shared fixtures: where the real-world inputs in ../shared/data live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def astrasim_example(shared_data: Path) -> Path:
    return shared_data / "astra-sim" / "custom-ring-allreduce-8npus-1MB"


@pytest.fixture(scope="session")
def msccl_dir(shared_data: Path) -> Path:
    return shared_data / "msccl-ir"
