"""``import hub`` is enough for the common path: each verb is its home's function (one definition,
two addresses), and the registration plumbing is answered for older code but not exported."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import hub

VERBS = {
    "make": "hub.algorithms",
    "check": "hub.verify",
    "simulate": "hub.sim",
    "read_algorithm": "hub.chakra",
    "write_algorithm": "hub.chakra",
    "read_workload": "hub.chakra",
    "write_workload": "hub.chakra",
    "load_topology": "hub.topology",
    "load_pipeline": "hub.pipeline",
    "run_pipeline": "hub.pipeline",
}
PLUMBING = ("ConsumerSpec", "ProducerSpec", "TransformSpec", "RunContext", "hookimpl")


@pytest.mark.parametrize("name, home", VERBS.items())
def test_each_verb_is_its_homes_function(name: str, home: str) -> None:
    assert name in hub.__all__
    assert getattr(hub, name) is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize("name", PLUMBING)
def test_registration_plumbing_is_answered_but_not_exported(name: str) -> None:
    from hub import plugins

    assert getattr(hub, name) is getattr(plugins, name)
    assert name not in hub.__all__ and name not in dir(hub) and name not in vars(hub)


def test_the_common_path_takes_one_import(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    program = (
        "import hub\n"
        "alg = hub.make('ring', 'allreduce', 4)\n"
        "hub.check(alg)\n"
        "t = hub.simulate(alg, 'ring:4', size=1 << 20).time_ns\n"
        "hub.write_algorithm(alg.bind(1 << 20), 'out/ring')\n"
        "back = hub.read_algorithm('out/ring')\n"
        "print(t, len(back.graphs))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    time_ns, ranks = done.stdout.split()
    assert int(time_ns) > 0 and int(ranks) == 4
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"ring.{r}.et" for r in range(4)]
