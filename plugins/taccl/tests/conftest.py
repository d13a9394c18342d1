"""Fixtures of the collhub-taccl tests: TACCL's own example files in ../shared/data/taccl."""

from __future__ import annotations

from pathlib import Path

import pytest

TACCL = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "taccl"


@pytest.fixture(scope="session")
def taccl_dir() -> Path:
    if not (TACCL / "sketch").is_dir():
        pytest.skip(f"TACCL example files not found at {TACCL}")
    return TACCL
