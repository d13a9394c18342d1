"""The shipped greedy (``collhub_tacos._greedy``) makes exactly the schedules of the pre-#19 greedy,
kept as a test-only reference (``reference_greedy``): same transfers, links, start times, events,
replacements and cancellations, on random topologies (meshes, tori, 2-D/3-D, heterogeneous links,
switches, DGX-1), both cost models, both policies, several chunk counts and seeds, and on every
topology the other TACOS tests use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from collhub_tacos import network_of
from collhub_tacos._build import _link_tags, build_algorithm, forward_phase, reversed_phase
from collhub_tacos._greedy import Schedule, greedy_allgather
from hub.topology import load_topology

from . import reference_greedy


def _same(
    topology: str, chunks: int, model: str, seed: int, policy: str = "scarce", rule: bool = True, both: bool = True
) -> None:
    net = network_of(load_topology(topology))
    for n in (net, net.reversed()) if both else (net,):  # the reduce-scatter runs on the reversed network
        busy, delay = n.link_times_us((1 << 20) / chunks, model)
        got = greedy_allgather(n, chunks, busy, delay, np.random.default_rng(seed), None, policy, rule)
        ref = reference_greedy.greedy_allgather(n, chunks, busy, delay, np.random.default_rng(seed), None, policy, rule)
        _assert_equal(got, ref, f"{topology} k={chunks} {model} seed={seed} {policy} rule={rule}")


def _assert_equal(got: Schedule, ref: reference_greedy.Schedule, what: str) -> None:
    for field in ("chunk", "link", "start", "end"):
        assert np.array_equal(getattr(got, field), getattr(ref, field)), f"{what}: {field} differs"
    assert (got.events, got.replaced, got.cancelled, got.makespan) == (
        ref.events,
        ref.replaced,
        ref.cancelled,
        ref.makespan,
    ), what


# every topology the TACOS tests (and bench_tacos's TACOS table) use, at their chunk counts and models
USED = [
    ("torus:4x4", 2, "tacos"),
    ("mesh:4x4@bw=100/25,lat=500/2000", 2, "pipelined"),
    ("dgx1", 3, "tacos"),
    ("dgx1", 4, "pipelined"),
    ("fattree:2x4", 1, "pipelined"),
    ("ring:4,switch:2", 2, "tacos"),
    ("torus:6x6", 2, "tacos"),
    ("mesh:3x5@bw=100/40,lat=300/900", 2, "tacos"),
    ("torus:8x8@bw=50,lat=500", 1, "tacos"),
    ("mesh:8x8@bw=50,lat=500", 4, "tacos"),
    ("torus:4x4x4@bw=50,lat=500", 4, "tacos"),
    ("torus:16x16", 1, "tacos"),
    ("mesh:8x8@bw=100/25,lat=500/2000", 4, "pipelined"),  # mixed speeds with 256 chunks: two passes
]


@pytest.mark.parametrize("topology,chunks,model", USED)
def test_same_schedule_on_the_tested_topologies(topology: str, chunks: int, model: str) -> None:
    # the 256-chunk mixed-speed mesh checks the forward network only: the reference greedy needs
    # ~10 s a direction there, and the reversed direction is covered at smaller sizes
    _same(topology, chunks, model, 0, both=topology != "mesh:8x8@bw=100/25,lat=500/2000")


def _random_topology(rng: np.random.Generator) -> str:
    kind = rng.choice(["torus2", "mesh2", "torus3", "mesh3", "hetero", "fattree", "ringswitch"])
    d = [int(x) for x in rng.integers(2, 6, size=3)]
    if kind == "torus2":
        return f"torus:{d[0]}x{d[1] + 1}"
    if kind == "mesh2":
        return f"mesh:{d[0]}x{d[1] + 2}"
    if kind == "torus3":
        return f"torus:{d[0]}x{d[1]}x{min(d[2], 3)}"
    if kind == "mesh3":
        return f"mesh:{d[0]}x{min(d[1], 3)}x{min(d[2], 3)}"
    if kind == "hetero":  # mixed-speed links: the overtaking, replacement and slow-link rules run
        bw = [int(x) for x in rng.integers(10, 200, size=2)]
        lat = [int(x) for x in rng.integers(100, 3000, size=2)]
        return f"mesh:{d[0]}x{d[1] + 1}@bw={bw[0]}/{bw[1]},lat={lat[0]}/{lat[1]}"
    if kind == "fattree":
        return f"fattree:{d[0]}x{d[1]}"
    return f"ring:{d[0]},switch:{d[1]}"


@pytest.mark.parametrize("case", range(24))
def test_same_schedule_on_random_topologies(case: int) -> None:
    rng = np.random.default_rng(1900 + case)
    topology = _random_topology(rng)
    chunks = int(rng.integers(1, 4))
    model = str(rng.choice(["tacos", "pipelined"]))
    policy = "random" if case % 4 == 3 else "scarce"
    _same(topology, chunks, model, int(rng.integers(1 << 30)), policy, rule=case % 5 != 4)


@pytest.mark.parametrize("collective", ["allgather", "allreduce"])
def test_same_et_bytes(tmp_path: Path, collective: str) -> None:
    """The written ET files of the shipped greedy's schedule and of the reference's are the same bytes."""
    from hub.chakra import Collective, write_algorithm

    net = network_of(load_topology("torus:6x4"))
    busy, delay = net.link_times_us(1 << 18, "tacos")
    out = []
    for name, fn in (("new", greedy_allgather), ("ref", reference_greedy.greedy_allgather)):
        ag = fn(net, 2, busy, delay, np.random.default_rng(3))
        if collective == "allgather":
            phases = [forward_phase(net, ag)]
        else:
            rs = fn(net.reversed(), 2, busy, delay, np.random.default_rng(4))
            phases = [reversed_phase(net, rs), forward_phase(net, ag, rs.makespan)]
        alg = build_algorithm(Collective.parse(collective), net.npus, 2, phases, name="same")
        write_algorithm(alg, tmp_path / name / "a")
        out.append(sorted((tmp_path / name).iterdir()))
    assert len(out[0]) == len(out[1]) == net.npus
    for a, b in zip(*out, strict=True):
        assert a.name == b.name and a.read_bytes() == b.read_bytes(), a.name


def test_link_tags_are_the_time_order_on_each_link() -> None:
    """_link_tags (a radix sort by link where the schedule is in time order) numbers each link's
    transfers by start time, as the (link, start) lexsort it replaced did."""
    net = network_of(load_topology("torus:8x8"))
    busy, delay = net.link_times_us(1 << 20, "tacos")
    s = greedy_allgather(net, 2, busy, delay, np.random.default_rng(0))
    for phases in ([forward_phase(net, s)], [reversed_phase(net, s), forward_phase(net, s, s.makespan)]):
        tags = np.concatenate(_link_tags(phases))
        link = np.concatenate([p.link for p in phases])
        start = np.concatenate([p.start for p in phases])
        for ln in range(net.links):
            sel = np.flatnonzero(link == ln)
            assert np.array_equal(tags[sel[np.argsort(start[sel], kind="stable")]], np.arange(sel.size))


def test_the_scoring_is_compiled() -> None:
    """The plugin's C scoring is built (setup.py): without it the numpy path runs, slower."""
    from collhub_tacos import _greedy

    assert _greedy._compiled is not None


@pytest.mark.parametrize(
    ("topology", "chunks", "model", "policy"),
    [
        ("torus:8x8", 1, "tacos", "scarce"),
        ("torus:6x6", 3, "pipelined", "random"),
        ("mesh:4x4@bw=100/25,lat=500/2000", 2, "pipelined", "scarce"),
        ("dgx1", 4, "pipelined", "scarce"),
        ("fattree:2x4", 2, "tacos", "scarce"),
        ("torus:4x4x4", 2, "tacos", "scarce"),
    ],
)
@pytest.mark.parametrize("seed", [0, 7])
def test_compiled_scoring_makes_the_numpy_schedules(
    topology: str, chunks: int, model: str, policy: str, seed: int
) -> None:
    """The compiled first-minimum scan and numpy's key matrices pick the same chunks: the same
    transfers, times, events, replacements and makespan, on both directions of the network."""
    net = network_of(load_topology(topology))
    for n in (net, net.reversed()):
        busy, delay = n.link_times_us((1 << 20) / chunks, model)
        got = greedy_allgather(n, chunks, busy, delay, np.random.default_rng(seed), None, policy, True, True)
        ref = greedy_allgather(n, chunks, busy, delay, np.random.default_rng(seed), None, policy, True, False)
        _assert_equal(got, ref, f"{topology} k={chunks} {model} seed={seed} {policy}")  # type: ignore[arg-type]
