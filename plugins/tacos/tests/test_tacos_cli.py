"""From the shell (real `collhub` subprocesses): bad input is one clear error with exit 3 and no
output files; a good run writes ET files whose provenance `trace show --format json` shows, and
the result flows on to `hub.simulate` and `mscclang.export`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

COLLHUB = [sys.executable, "-m", "hub.cli"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COLLHUB, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def produce(cwd: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    return run("produce", "tacos.synthesize", *[a for s in sets for a in ("--set", s)], "--out", "out/alg", cwd=cwd)


@pytest.mark.parametrize(
    "sets,needle",
    [
        (("collective=allgather", "topology=split.json"), "disconnected: NPU 0 cannot reach NPU 2"),
        (("collective=allgather", "topology=torus:4x4", "ranks=8"), "ranks=8 but topology"),
        (("collective=allgather", "topology=torus:4x4@bw=0"), "bw=0 is outside 0.001"),
        (("collective=allreduce", "topology=torus:4x4@bw=-2"), "bw=-2 is outside 0.001"),
        (("collective=allgather", "topology=zero.json"), "has bandwidth 0.0; must be > 0"),
        (("collective=allgather", "topology=torus:4x4", "chunks=0"), "chunks must be >= 1"),
        (("collective=reducescatter", "topology=torus:4x4", "chunks=-3"), "chunks must be >= 1"),
    ],
)
def test_bad_input_exit_3(tmp_path: Path, sets: tuple[str, ...], needle: str) -> None:
    (tmp_path / "split.json").write_text(
        json.dumps({"npus": 4, "bidirectional": True, "links": [[0, 1, 50, 500], [2, 3, 50, 500]]})
    )
    (tmp_path / "zero.json").write_text(json.dumps({"npus": 2, "links": [[0, 1, 50, 500], [1, 0, 0, 500]]}))
    p = produce(tmp_path, *sets)
    assert p.returncode == 3, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines[0].startswith("error: ") and needle in lines[0], p.stderr
    assert all(ln.startswith(("error: ", "hint: ")) for ln in lines), p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_produce_show_simulate_export(tmp_path: Path) -> None:
    p = produce(tmp_path, "collective=allreduce", "topology=torus:4x4", "chunks=2", "size=4MiB", "seed=3")
    assert p.returncode == 0, p.stderr
    assert len(list((tmp_path / "out").glob("alg.*.et"))) == 16
    show = run("trace", "show", "out/alg", "--format", "json", cwd=tmp_path)
    assert show.returncode == 0, show.stderr
    meta = json.loads(show.stdout)["summary"]["metadata"]
    for key in ("tacos.seed", "tacos.cost_model", "model_makespan_us", "lower_bound_us", "bound_ratio", "synthesis_s"):
        assert key in meta
    assert meta["tacos.seed"] == 3 and meta["tacos.verified"] is True
    sim = run(
        "consume",
        "hub.simulate",
        "out/alg",
        "--set",
        "network=torus:4x4",
        "--set",
        "mode=aware",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert sim.returncode == 0, sim.stderr
    exp = run("consume", "mscclang.export", "out/alg", "--set", "out=ar.xml", "--set", "verify=true", cwd=tmp_path)
    assert exp.returncode == 0, exp.stderr
    assert (tmp_path / "ar.xml").read_text().lstrip().startswith("<algo")


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    """On a pseudo-terminal the rich bar is drawn on stderr; in a pipe (the other tests) it is not."""
    import os
    import pty
    import select

    master, slave = pty.openpty()
    p = subprocess.Popen(
        [
            *COLLHUB,
            "produce",
            "tacos.synthesize",
            "--set",
            "collective=allgather",
            "--set",
            "topology=torus:16x16",
            "--set",
            "progress=true",
            "--out",
            "pb/pb",
        ],
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        cwd=tmp_path,
        close_fds=True,
    )
    os.close(slave)
    buf = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        buf += data
    os.close(master)
    assert p.wait(timeout=120) == 0
    text = buf.decode("utf-8", "replace")
    assert "all-gather seed 0" in text and "100%" in text
    quiet = produce(tmp_path, "collective=allgather", "topology=torus:16x16", "progress=true")
    assert quiet.returncode == 0 and "seed 0" not in quiet.stderr


def _sim_ns(cwd: Path, prefix: str, net: str, size: str) -> int:
    p = run(
        "consume",
        "hub.simulate",
        prefix,
        "--set",
        f"network={net}",
        "--set",
        "mode=aware",
        "--set",
        f"size={size}",
        "--format",
        "json",
        cwd=cwd,
    )
    assert p.returncode == 0, p.stderr
    return int(json.loads(p.stdout)["metrics"]["time_ns"])


def test_fat_tree_falls_back_to_direct_and_says_so(tmp_path: Path) -> None:
    """On fattree:4x4 the greedy's schedule simulates slower than hub.direct (aware, 64 MiB): the
    output is hub.direct's algorithm, stated in metadata and as a warning line."""
    net, size = "fattree:4x4", "64MiB"
    d = run("produce", "hub.direct", "--set", "collective=allgather", "--set", "ranks=16", "--out", "d/d", cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    direct_ns = _sim_ns(tmp_path, "d/d", net, size)
    greedy = produce(tmp_path, "collective=allgather", f"network={net}", f"size={size}", "fallback=none")
    assert greedy.returncode == 0 and "warning" not in greedy.stderr, greedy.stderr
    assert _sim_ns(tmp_path, "out/alg", net, size) > direct_ns  # the case the fallback is for
    p = produce(tmp_path, "collective=allgather", f"network={net}", f"size={size}")
    assert p.returncode == 0, p.stderr
    warn = [ln for ln in p.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warn) == 1 and "hub.direct simulates faster" in warn[0], p.stderr
    meta = json.loads(run("trace", "show", "out/alg", "--format", "json", cwd=tmp_path).stdout)["summary"]["metadata"]
    assert meta["tacos.fallback"] == "hub.direct" and meta["tacos.direct_aware_ns"] == direct_ns
    assert meta["tacos.greedy_aware_ns"] > direct_ns
    assert _sim_ns(tmp_path, "out/alg", net, size) == direct_ns
    assert run("trace", "verify", "out/alg", cwd=tmp_path).returncode == 0


def test_large_allreduce_exports_within_the_per_threadblock_limit(tmp_path: Path) -> None:
    """An 8x8 torus all-reduce carries 126 messages on one link; for the executor (64 steps per
    threadblock) the export deals them over channels, and the file imports back and verifies."""
    net = "torus:8x8"
    p = produce(tmp_path, "collective=allreduce", f"network={net}", "chunks=2", "size=64MiB")
    assert p.returncode == 0, p.stderr
    legacy = run(
        "consume",
        "mscclang.export",
        "out/alg",
        "--set",
        "out=l.xml",
        "--set",
        "target=msccl-legacy",
        "-f",
        "json",
        cwd=tmp_path,
    )
    assert legacy.returncode == 0, legacy.stderr
    assert json.loads(legacy.stdout)["metrics"]["max_steps_per_tb"] > 64  # one tb per link would not load
    exp = run(
        "consume",
        "mscclang.export",
        "out/alg",
        "--set",
        "out=a.xml",
        "--set",
        "verify=true",
        "-f",
        "json",
        cwd=tmp_path,
    )
    assert exp.returncode == 0, exp.stderr
    m = json.loads(exp.stdout)["metrics"]
    assert m["max_steps_per_tb"] <= 64 and 1 < m["nchannels"] <= 32 and m["target"] == "msccl-executor-nccl"
    imp = run("produce", "mscclang.ir", "--set", "path=a.xml", "--out", "back/alg", cwd=tmp_path)
    assert imp.returncode == 0, imp.stderr
    assert run("trace", "verify", "back/alg", cwd=tmp_path).returncode == 0
    ours, back = _sim_ns(tmp_path, "out/alg", net, "64MiB"), _sim_ns(tmp_path, "back/alg", net, "64MiB")
    assert back <= 1.15 * ours  # threadblocks serialize a little; the channels keep it close
