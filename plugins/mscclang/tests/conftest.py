"""Fixtures of the collhub-mscclang tests: the MSCCL-IR corpus in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from .mscclang_corpus import CORPUS


@pytest.fixture(scope="session")
def msccl_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"MSCCL-IR corpus not found at {CORPUS}")
    return CORPUS
