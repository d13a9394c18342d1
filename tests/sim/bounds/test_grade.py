"""hub.sim.grade: a produced algorithm against the certified bound of the network it was made for
(the rules of hub/sim/_bounds/grade.py), and ``collhub produce`` / ``trace show`` printing it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hub.algorithms import make
from hub.chakra import read_algorithm, write_algorithm
from hub.sim import grade, simulate, with_grade
from hub.sim._bounds import grade as _grade

COLLHUB = [sys.executable, "-m", "hub.cli"]
MIB = 1 << 20


def test_switch_allgather_bound_by_hand() -> None:
    # switch:8 (50 GB/s per port, ASTRA-sim's GB/s = 2^30 B/s): every GPU takes in 7/8 of 8 MiB
    # through one port, so the bound is 7 MiB / (50 * 2^30 / 1e9 B/ns)
    g = grade(make("direct", "allgather", 8), {"network": "switch:8", "size": "8MiB"})
    assert g is not None and g.term == "bandwidth" and g.size == 8 * MIB
    assert g.bound_ns == pytest.approx(7 * MIB / (50 * 2**30 / 1e9), rel=1e-9)
    assert g.time_ns is not None and g.time_over_bound is not None and g.time_over_bound >= 1.0


def test_grade_is_what_consume_prints() -> None:
    alg = make("ring", "allreduce", 8)
    g = grade(alg, {"network": "ring:8", "size": "1MiB"})
    res = simulate(alg, "ring:8", size="1MiB", mode="auto")
    assert g is not None and (g.time_ns, g.bound_ns, g.term, g.mode) == (
        res.time_ns,
        res.bound_ns,
        res.bound_term,
        res.mode,
    )


@pytest.mark.parametrize(
    "params",
    [
        {"size": "1MiB"},  # no network
        {"network": "ring:8"},  # no size, unbound algorithm
        {"network": "ring:4", "size": "1MiB"},  # another rank count
        {"topology": "no/such/profile.json", "size": "1MiB"},  # not a collhub network (TACCL's profile)
    ],
)
def test_no_grade(params: dict[str, str]) -> None:
    assert grade(make("ring", "allgather", 8), params) is None


def test_topology_alias_and_bound_size_wins() -> None:
    alg = make("ring", "allgather", 8).bind(2 * MIB)
    g = grade(alg, {"topology": "ring:8", "size": "1MiB"})
    assert g is not None and g.size == 2 * MIB and g.network.startswith("ring:8")


def test_too_many_messages_keeps_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_grade, "GRADE_MESSAGES", 10)
    g = grade(make("ring", "allgather", 8), {"network": "ring:8", "size": "1MiB"})
    assert g is not None and g.time_ns is None and g.time_over_bound is None and g.bound_ns > 0
    assert g.skipped is not None and "56 messages" in g.skipped
    assert dict(g.metadata()).keys() == {"bound_ns", "bound_term", "bound_network", "bound_size", "bound_formula"}


def test_metadata_replaces_and_round_trips(tmp_path: Path) -> None:
    alg = make("ring", "allgather", 8).bind(MIB)
    alg = alg.with_meta(extra=(("bound_ns", 1.0), ("mine", "kept")))
    g = grade(alg, {"network": "ring:8"})
    assert g is not None
    graded = with_grade(alg, g)
    extra = dict(graded.meta.extra)
    assert [k for k, _ in graded.meta.extra].count("bound_ns") == 1 and extra["mine"] == "kept"
    write_algorithm(graded, tmp_path / "a")
    back = dict(read_algorithm(tmp_path / "a").meta.extra)
    assert back["bound_ns"] == pytest.approx(g.bound_ns, abs=1e-3) and back["simulated_ns"] == g.time_ns
    assert back["bound_term"] == g.term and back["bound_size"] == MIB


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COLLHUB, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_produce_prints_and_records_the_grade(tmp_path: Path) -> None:
    sets = ["--set", "collective=allgather", "--set", "network=ring:4", "--set", "size=1MiB"]
    p = _run("produce", "tacos.synthesize", *sets, "--out", "out/t", "--format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    b = json.loads(p.stdout)["bound"]
    res = simulate(read_algorithm(tmp_path / "out/t"), "ring:4", mode="auto")
    assert (b["time_ns"], b["bound_ns"], b["bound_term"]) == (res.time_ns, res.bound_ns, res.bound_term)
    assert b["percent_of_bound"] == f"{res.time_ns / res.bound_ns * 100:.0f}%" and b["network"].startswith("ring:4")
    text = _run("produce", "tacos.synthesize", *sets, "--out", "out/t2", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert f"simulated   {res.time_ns:,} ns (aware): {b['percent_of_bound']} of bound" in text.stdout
    show = _run("trace", "show", "out/t2", cwd=tmp_path)
    assert show.returncode == 0 and f"{b['percent_of_bound']} of bound" in show.stdout
    assert f"bound       {round(res.bound_ns, 3):,.1f} ns ({res.bound_term}) on ring:4" in show.stdout


def test_produce_without_network_prints_no_bound(tmp_path: Path) -> None:
    p = _run("produce", "hub.ring", "--set", "collective=allgather", "--set", "ranks=4", "--out", "r", cwd=tmp_path)
    assert p.returncode == 0 and "of bound" not in p.stdout and "\nbound " not in p.stdout
