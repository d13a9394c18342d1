"""Fixtures for the collhub-astrasim tests (helpers live in astrasim_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
EXAMPLE = SHARED_DATA / "astra-sim" / "custom-ring-allreduce-8npus-1MB"


@pytest.fixture(scope="session")
def example() -> Path:
    """The ASTRA-sim custom-collective example in the shared data (skips when absent)."""
    if not EXAMPLE.is_dir():
        pytest.skip(f"shared ASTRA-sim example not found at {EXAMPLE}")
    return EXAMPLE
