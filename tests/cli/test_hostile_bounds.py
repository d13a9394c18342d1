"""Hostile numbers and output places through the real CLI (issue 26): every number is checked
where it enters (``--set``: exit 2, pipeline files: exit 3 from ``pipeline validate``), and
every unusable output place is one clean error naming the path (exit 2; a full disk exit 1),
whether the core or a plugin writes. Each case is a real ``collhub`` subprocess under a
memory cap and a time limit (tests/registry/hostile_cli.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry.hostile_cli import Ran, assert_clean, run_many

REPO = Path(__file__).resolve().parents[2]
RING4 = ["--set", "ranks=4", "--set", "collective=allreduce"]


def _env(tmp: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(REPO), "COLLHUB_CACHE_DIR": str(tmp / ".cache")}


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-rank ring all-reduce ET set (written by the real CLI)."""
    d = tmp_path_factory.mktemp("ring")
    subprocess.run(
        [sys.executable, "-m", "hub.cli", "produce", "hub.ring", *RING4, "-o", str(d / "r")],
        check=True,
        capture_output=True,
        env={**os.environ, **_env(d)},
    )
    return d / "r"


def _sim(ring: Path, value: str) -> list[str]:
    return ["consume", "hub.simulate", str(ring), "--set", "network=ring:4", "--set", value]


# (case id, argv after `collhub`, word the error must contain); ring is filled in per test
NUMBER_CASES: list[tuple[str, list[str], str]] = [
    ("size-1e400", ["SIM", "size=1e400"], "out of range"),
    ("size-31-digits", ["SIM", "size=1000000000000000000000000000000"], "out of range"),
    ("size-huge-exponent", ["SIM", "size=1e999999999"], "out of range"),
    ("size-2TiB", ["SIM", "size=2TiB"], "out of range"),
    ("size-true", ["SIM", "size=true"], "boolean"),
    ("size-inf", ["SIM", "size=.inf"], "size"),
    ("bandwidth-1e400", ["SIM", "reduction_GBps=1e400"], "finite"),
    ("bandwidth-inf", ["SIM", "reduction_GBps=.inf"], "finite"),
    (
        "ranks-true",
        ["produce", "hub.ring", "--set", "ranks=true", "--set", "collective=allreduce", "-o", "OUT"],
        "boolean",
    ),  # fmt: skip
    (
        "ranks-31-digits",
        [
            "produce",
            "hub.ring",
            "--set",
            "ranks=1000000000000000000000000000000",
            "--set",
            "collective=allreduce",
            "-o",
            "OUT",
        ],
        "ranks",
    ),  # fmt: skip
    (
        "root-false",
        ["produce", "hub.ring", *RING4[:2], "--set", "collective=broadcast", "--set", "root=false", "-o", "OUT"],
        "boolean",
    ),  # fmt: skip
    ("instances-1e8", ["transform", "hub.instances", "RING", "OUT", "--set", "count=100000000"], "count"),
    ("instances-true", ["transform", "hub.instances", "RING", "OUT", "--set", "count=true"], "boolean"),
    ("chunk-1e8", ["transform", "hub.chunk", "RING", "OUT", "--set", "pieces=100000000"], "pieces"),
]


def _fill(args: list[str], ring: Path, out: Path) -> list[str]:
    filled: list[str] = []
    for a in args:
        if a == "SIM":
            filled += ["consume", "hub.simulate", str(ring), "--set", "network=ring:4", "--set"]
        else:
            filled.append(str(ring) if a == "RING" else str(out) if a == "OUT" else a)
    return filled


def test_numbers_out_of_range_in_set_are_usage_errors(ring: Path, tmp_path: Path) -> None:
    cases = [(_fill(args, ring, tmp_path / case / "o"), _env(tmp_path)) for case, args, _ in NUMBER_CASES]
    for (case, _, said), ran in zip(NUMBER_CASES, run_many(cases), strict=True):
        assert_clean(ran, 2)
        assert said in ran.stderr, f"{case}: {ran.stderr}"
        assert not (tmp_path / case).exists(), f"{case}: wrote something"


PIPELINE_CASES: list[tuple[str, str, str]] = [
    ("size-1e400", "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}}\n"
     "consumers: {s: {use: hub.simulate, params: {network: 'ring:4', size: 1e400}}}", "size"),
    ("size-31-digits", "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}}\n"
     "consumers: {s: {use: hub.simulate, params: {network: 'ring:4', size: 1000000000000000000000000000000}}}",
     "size"),
    ("size-matrix", "matrix: {size: [1MiB, 1e400]}\n"
     "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}}\n"
     "consumers: {s: {use: hub.simulate, params: {network: 'ring:4', size: '${size}'}}}", "size"),
    ("ranks-true", "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: true}}}", "ranks"),
    ("ranks-matrix-true", "matrix: {n: [4, true]}\n"
     "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: '${n}'}}}", "ranks"),
    ("channels-31-digits", "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: 4, "
     "channels: 1000000000000000000000000000000}}}", "channels"),
    ("bandwidth-inf", "sources: {r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}}\n"
     "consumers: {s: {use: hub.simulate, params: {network: 'ring:4', reduction_GBps: .inf}}}", "reduction_GBps"),
]  # fmt: skip


def test_numbers_out_of_range_in_pipeline_files_fail_validate(tmp_path: Path) -> None:
    cases = []
    for case, body, _ in PIPELINE_CASES:
        (tmp_path / f"{case}.yaml").write_text("version: 1\n" + body + "\n")
        cases.append((["pipeline", "validate", str(tmp_path / f"{case}.yaml")], _env(tmp_path)))
    for (case, _, field), ran in zip(PIPELINE_CASES, run_many(cases), strict=True):
        assert ran.rc == 3, f"{case}: rc={ran.rc}\n{ran.stdout}\n{ran.stderr}"
        assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr, ran.stderr
        assert f".{field}:" in ran.stdout, f"{case}: {ran.stdout}"


# --- output places ---------------------------------------------------------------------------

OUT_CASES: list[tuple[str, list[str], str]] = [
    ("produce-under-etc-passwd", ["produce", "hub.ring", *RING4, "-o", "/etc/passwd/x"], "/etc/passwd"),
    ("produce-under-etc-passwd-deep", ["produce", "hub.ring", *RING4, "-o", "/etc/passwd/x/y"], "/etc/passwd"),
    ("produce-under-file", ["produce", "hub.ring", *RING4, "-o", "AFILE/sub/x"], "afile"),
    ("produce-proc", ["produce", "hub.ring", *RING4, "-o", "/proc/collhub-x"], "/proc/collhub-x"),
    ("produce-proc-deep", ["produce", "hub.ring", *RING4, "-o", "/proc/collhub-x/y"], "/proc/collhub-x"),
    ("produce-dev-null-dir", ["produce", "hub.ring", *RING4, "-o", "/dev/null/x"], "/dev/null"),
    ("transform-under-file", ["transform", "hub.chunk", "RING", "AFILE/t"], "afile"),
    ("run-under-file", ["run", "PIPE", "-o", "AFILE/sub"], "afile"),
    ("run-proc", ["run", "PIPE", "-o", "/proc/collhub-run"], "/proc/collhub-run"),
    ("bundle-proc", ["consume", "astrasim.bundle", "RING", "--set", "network=ring:4", "--set", "out=/proc/collhub-b"],
     "/proc/collhub-b"),
    ("bundle-under-file", ["consume", "astrasim.bundle", "RING", "--set", "network=ring:4", "--set", "out=AFILE/b"],
     "afile"),
    ("export-proc", ["consume", "mscclang.export", "RING", "--set", "out=/proc/collhub-x.xml"], "/proc/collhub-x.xml"),
]  # fmt: skip


def _place(args: list[str], ring: Path, tmp: Path) -> list[str]:
    subst = {"RING": str(ring), "PIPE": str(tmp / "p.yaml")}
    return [subst.get(a, a.replace("AFILE", str(tmp / "afile"))) for a in args]


def _setup(tmp: Path) -> None:
    (tmp / "afile").write_text("mine\n")
    (tmp / "p.yaml").write_text(
        "version: 1\nsources:\n  r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}\n"
    )


def _check_places(cases: list[tuple[str, list[str], str]], ran: list[Ran], tmp: Path, rc: int) -> None:
    for (case, _, said), result in zip(cases, ran, strict=True):
        assert_clean(result, rc)
        first = next(ln for ln in result.stderr.splitlines() if ln.startswith("error: "))
        assert said in first, f"{case}: {first}"
        assert "bug" not in result.stderr, f"{case}: {result.stderr}"
    assert (tmp / "afile").read_text() == "mine\n"


def test_unusable_output_places_are_usage_errors(ring: Path, tmp_path: Path) -> None:
    _setup(tmp_path)
    cases = [(_place(args, ring, tmp_path), _env(tmp_path)) for _, args, _ in OUT_CASES]
    _check_places(OUT_CASES, run_many(cases), tmp_path, 2)


@contextlib.contextmanager
def _tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A small tmpfs mounted at ``where`` (root only; skips where mounting is not allowed)."""
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small or read-only file system needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_read_only_output_places_are_usage_errors(ring: Path, tmp_path: Path) -> None:
    """A directory the process may not write (a read-only mount: root may write anywhere else)."""
    _setup(tmp_path)
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as ro:
        cases = [
            ("produce-ro", ["produce", "hub.ring", *RING4, "-o", f"{ro}/x"], f"{ro}/x"),
            ("produce-ro-sub", ["produce", "hub.ring", *RING4, "-o", f"{ro}/sub/x"], f"{ro}/sub"),
            ("run-ro", ["run", "PIPE", "-o", f"{ro}/run"], f"{ro}/run"),
            ("bundle-ro", ["consume", "astrasim.bundle", "RING", "--set", "network=ring:4", "--set", f"out={ro}/b"],
             f"{ro}/b"),
            ("trace-convert-ro", ["trace", "convert", "RING", f"{ro}/j.json"], f"{ro}/j.json"),
        ]  # fmt: skip
        ran = run_many([(_place(args, ring, tmp_path), _env(tmp_path)) for _, args, _ in cases])
        _check_places(cases, ran, tmp_path, 2)
        assert os.listdir(ro) == []


def test_a_full_disk_is_exit_1_and_leaves_nothing(ring: Path, tmp_path: Path) -> None:
    _setup(tmp_path)
    with _tmpfs(tmp_path / "full", "size=64k") as full:
        cases = [
            ("produce-full", ["produce", "hub.ring", "--set", "ranks=128", "--set", "collective=allreduce",
                              "-o", f"{full}/x"], f"{full}/x"),
            ("produce-full-json", ["produce", "hub.ring", "--set", "ranks=96", "--set", "collective=allgather",
                                   "-o", f"{full}/y", "--format", "json"], f"{full}/y"),
        ]  # fmt: skip
        ran = run_many([(_place(args, ring, tmp_path), _env(tmp_path)) for _, args, _ in cases])
        for (case, _, said), result in zip(cases, ran, strict=True):
            assert_clean(result, 1)
            assert said in result.stderr and "No space left" in result.stderr, f"{case}: {result.stderr}"
        assert os.listdir(full) == []


NETWORK_CASES: list[tuple[str, str, str]] = [
    ("bandwidth-inf", "topology: [Ring]\nnpus_count: [4]\nbandwidth: [.inf]\nlatency: [500]\n", "'bandwidth'[0]"),
    ("bandwidth-nan", "topology: [Ring]\nnpus_count: [4]\nbandwidth: [.nan]\nlatency: [500]\n", "'bandwidth'[0]"),
    ("bandwidth-true", "topology: [Ring]\nnpus_count: [4]\nbandwidth: [true]\nlatency: [500]\n", "'bandwidth'[0]"),
    ("latency-31-digits", "topology: [Ring]\nnpus_count: [4]\nbandwidth: [50]\nlatency: [1" + "0" * 30 + "]\n",
     "'latency'[0]"),
    ("npus-true", "topology: [Ring]\nnpus_count: [true]\nbandwidth: [50]\nlatency: [500]\n", "'npus_count'[0]"),
    ("npus-21-digits", "topology: [Ring]\nnpus_count: [1" + "0" * 20 + "]\nbandwidth: [50]\nlatency: [500]\n",
     "'npus_count'[0]"),
    ("npus-product", "topology: [Ring, Ring]\nnpus_count: [65536, 65536]\nbandwidth: [50, 50]\nlatency: [500, 500]\n",
     "NPUs in all"),
]  # fmt: skip


def test_numbers_out_of_range_in_network_files(ring: Path, tmp_path: Path) -> None:
    """An ASTRA-sim network.yml holds the same ranges as a topology string (exit 3, naming the key)."""
    cases = []
    for case, body, _ in NETWORK_CASES:
        (tmp_path / f"{case}.yml").write_text(body)
        args = ["consume", "hub.simulate", str(ring), "--set", f"network={tmp_path / case}.yml", "--set", "size=1MiB"]
        cases.append((args, _env(tmp_path)))
    for (case, _, said), ran in zip(NETWORK_CASES, run_many(cases), strict=True):
        assert_clean(ran, 3)
        assert said in ran.stderr, f"{case}: {ran.stderr}"
