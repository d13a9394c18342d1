"""Fixtures for the collhub-astrasim tests (helpers live in astrasim_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# pytest's importlib mode does not put test directories on sys.path; the helpers module lives here
sys.path.insert(0, str(Path(__file__).resolve().parent))

EXAMPLE = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "astra-sim" / "custom-ring-allreduce-8npus-1MB"


@pytest.fixture(scope="session")
def example() -> Path:
    """The ASTRA-sim custom-collective example in the shared data (skips when absent)."""
    if not EXAMPLE.is_dir():
        pytest.skip(f"shared ASTRA-sim example not found at {EXAMPLE}")
    return EXAMPLE
