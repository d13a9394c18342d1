"""Shared fixtures: where the real-world inputs in ../shared/data live."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
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


# Fixture plugin distributions (package + .dist-info) put on sys.path for real entry-point loading.
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "plugins"
DISTS = {
    "good": "collhub_fixture_good",
    "broken": "collhub_fixture_broken",
    "newmajor": "collhub_fixture_newmajor",
    "dup_a": "collhub_fixture_dup_a",
    "dup_b": "collhub_fixture_dup_b",
}


@pytest.fixture
def use_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``use_plugins("good", "broken")``: make those distributions (and only those) loadable."""

    def use(*names: str) -> None:
        for name in names:
            monkeypatch.syspath_prepend(str(FIXTURES / name))
        # Ignore whatever else is installed in this environment: allow-list the fixtures only.
        monkeypatch.setenv("COLLHUB_LOAD_PLUGINS", ",".join(DISTS[n] for n in names))

    yield use
    for mod in [m for m in sys.modules if m.startswith("collhub_fixture_")]:
        del sys.modules[mod]
