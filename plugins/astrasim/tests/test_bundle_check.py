"""astrasim.bundle refuses a bundle the real binaries would abort on (hub.sim's rule set, the
drop-in ``run_astra_sim``), and writes nothing then."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.algorithms import ring
from hub.errors import UsageError


@pytest.mark.parametrize("backend", ["aware", "unaware", "any"])
def test_bundle_with_events_at_time_zero_is_refused(tmp_path: Path, backend: str) -> None:
    from collhub_astrasim._bundle import _dims_for, build_bundle

    alg = ring("allgather", 4).bind(4)  # 1-byte messages, latency 0: each arrives at t = 0
    with pytest.raises(UsageError, match=r"would not run on AstraSim_Analytical_Congestion_.*at t = 0"):
        build_bundle(alg, out=tmp_path / "b", dims=_dims_for("ring:4@lat=0"), backend=backend, predict=False)
    assert not (tmp_path / "b").exists()


def test_bundle_that_runs_is_written(tmp_path: Path) -> None:
    from collhub_astrasim._bundle import _dims_for, build_bundle

    b = build_bundle(ring("allgather", 4).bind(4096), out=tmp_path / "b", dims=_dims_for("ring:4"), backend="aware")
    assert (b.path / "run.sh").is_file() and not (b.path / "log").exists()
