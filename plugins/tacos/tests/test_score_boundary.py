"""The boundary of the plugin's compiled scoring (``collhub_tacos._score``): bad types, wrong
lengths, None and huge values give a clean exception, never a crash (the sweep of the core's
extensions, tests/native/_hostile.py, over the plugin's stub)."""

from __future__ import annotations

from pathlib import Path

from tests.native._hostile import sweep

STUB = Path(__file__).resolve().parents[1] / "collhub_tacos" / "_score.pyi"


def test_hostile_arguments_never_crash() -> None:
    assert "calls" in sweep("collhub_tacos._score", STUB)
