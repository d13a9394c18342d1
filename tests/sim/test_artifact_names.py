"""A second `hub.simulate` with trace/plot in the same directory never overwrites the first one's
files: it writes `<name>-2.<mode>...` and its result names what it wrote (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.algorithms import make
from hub.plugins import RunContext
from hub.sim import SimulateParams, simulate_consumer


def test_second_run_writes_beside_the_first(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    alg = make("direct", collective="allreduce", ranks=4)
    params = SimulateParams(network="ring:4", size="1MiB", trace=True, plot=True)
    first = simulate_consumer(alg, params, RunContext(workdir=tmp_path))
    second = simulate_consumer(alg, params, RunContext(workdir=tmp_path))
    assert Path(first.artifacts["plot"]).name == "direct.aware.png"
    assert Path(second.artifacts["plot"]).name == "direct-2.aware.png"
    assert Path(second.artifacts["trace"]).name == "direct-2.aware.trace.json"
    for res in (first, second):
        for path in res.artifacts.values():
            assert Path(path).is_file()
