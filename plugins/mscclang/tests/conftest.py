"""Fixtures of the collhub-mscclang tests: the MSCCL-IR corpus in ../shared/data."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# pytest's importlib mode does not put test directories on sys.path: the helper modules
# (mscclang_corpus, the _symbolic oracle) live here.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mscclang_corpus import CORPUS, EXAMPLES, PLUGIN, corpus_files, histogram, manifest  # noqa: E402,F401


@pytest.fixture(scope="session")
def msccl_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"MSCCL-IR corpus not found at {CORPUS}")
    return CORPUS
