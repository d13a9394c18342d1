"""Shared helpers of the collhub-mscclang tests: the MSCCL-IR corpus in ../shared/data and the examples.

A uniquely named module (not ``conftest``) so that test files can import it whatever else pytest
has collected."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN = HERE.parent
EXAMPLES = PLUGIN / "examples"
CORPUS = PLUGIN.parents[1].parent / "shared" / "data" / "msccl-ir"


def corpus_files() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.xml")) if CORPUS.is_dir() else []


def manifest() -> dict[str, dict[str, str]]:
    """Rows of MANIFEST.md's table, keyed by file name."""
    rows: dict[str, dict[str, str]] = {}
    text = (CORPUS / "MANIFEST.md").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [h.strip() for h in lines[0].strip("|").split("|")]
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells, strict=False))
    return rows


def histogram(row: dict[str, str]) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", row["step types"])}
