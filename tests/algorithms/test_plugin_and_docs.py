"""The producers through the plugin manager, and the runnable example in docs/algorithms.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hub.algorithms import CATALOG
from hub.errors import AlgorithmError
from hub.plugins import RunContext, create_manager

DOC = Path(__file__).resolve().parents[2] / "docs" / "algorithms.md"


@pytest.fixture(scope="module")
def manager():
    return create_manager()


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_registered_components_match_the_catalog(manager, name: str) -> None:
    spec = manager.component(f"hub.{name}")
    assert set(spec.collectives) == set(CATALOG[name])
    coll = sorted(CATALOG[name])[0]
    alg = manager.run_producer(f"hub.{name}", {"collective": coll, "ranks": 4}, RunContext())
    assert alg.meta.producer == f"hub.{name}" and alg.meta.ranks == 4


def test_run_producer_passes_algorithm_errors_through(manager) -> None:
    with pytest.raises(AlgorithmError, match="power-of-two"):
        manager.run_producer("hub.halving_doubling", {"collective": "allgather", "ranks": 6}, RunContext())


def test_docs_example_runs(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/algorithms.md lost its Python example"
    exec(compile(blocks[0], str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert "'send': 112" in out and "'comp': 56" in out
    assert "['allgather', 'allreduce', 'alltoall', 'reducescatter']" in out
