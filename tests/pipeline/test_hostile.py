"""Hostile pipeline files and interrupts, through the real CLI in subprocesses.

Each bad file must end with exit 3, a one-line ``error:`` and a ``hint:``, no traceback and no
run directory, within a time limit (subprocess timeout) and an address-space limit (RLIMIT_AS).
Interrupts are real signals sent at random moments to a real ``collhub run --jobs 2``.
"""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hub.errors import PipelineValidationError
from hub.pipeline._file.loader import load_text

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "fixtures" / "hostile" / "pipeline"
FILES = sorted(CORPUS.glob("*.yaml"))
MEMORY = 2 << 30  # bytes of address space per CLI process


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _collhub(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_LOAD_PLUGINS="", COLLHUB_CACHE_DIR=str(cwd / ".cache"))
    env.pop("COLLHUB_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )


def test_corpus_is_there() -> None:
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_hostile_file_is_a_clean_validation_error(path: Path, tmp_path: Path) -> None:
    start = time.monotonic()
    r = _collhub("run", str(path), "-o", str(tmp_path / "out"), "--jobs", "1", cwd=tmp_path)
    assert time.monotonic() - start < 30
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.splitlines()
    assert lines[0].startswith("error: ") and "hint: " in r.stderr, r.stderr
    assert any(line.startswith("hint: ") for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".cache"] or not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out*"))  # no temporary run directory either


def test_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    r = _collhub("pipeline", "validate", str(fifo), cwd=tmp_path, timeout=20)
    assert r.returncode == 3 and "not a regular file" in r.stdout and "Traceback" not in r.stderr


def test_validate_reports_each_bad_network_with_its_position(tmp_path: Path) -> None:
    r = _collhub("pipeline", "validate", str(CORPUS / "network-in-matrix.yaml"), cwd=tmp_path)
    assert r.returncode == 3
    found = r.stdout.splitlines()
    assert len(found) == 3 and all(":7:46:" in line and "consumers.sim.params.network" in line for line in found)
    assert "garbage" in found[0] + found[1] + found[2] and "ring:0" in r.stdout and "bw=0" in r.stdout


def test_point_limit_is_overridable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "version: 1\nmatrix:\n  a: [1, 2, 3]\n  b: [1, 2]\nsources:\n  r: {producer: hub.ring, params: "
        "{collective: allreduce, ranks: 4}}\n"
    )
    from hub.pipeline import validate_text

    monkeypatch.setenv("COLLHUB_PIPELINE_MAX_POINTS", "5")
    with pytest.raises(PipelineValidationError, match="6 points"):
        validate_text(text, "m.yaml")
    monkeypatch.setenv("COLLHUB_PIPELINE_MAX_POINTS", "6")
    assert len(validate_text(text, "m.yaml").points) == 6


# ------------------------------------------------------------------ property-based: the loader
_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
_yamlish = st.recursive(
    _scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_loader_never_raises_anything_but_a_validation_error(text: str) -> None:
    try:
        loaded = load_text(text, "fuzz.yaml")
    except PipelineValidationError as exc:
        assert exc.issues and all(i.file == "fuzz.yaml" for i in exc.issues)
        assert "\n" not in exc.message
    else:
        assert loaded.file == "fuzz.yaml"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _yamlish,
    st.sampled_from(["*a", "&a", "<<: *a", "[*a, *a]", "\x00", "!!python/name:os.system", "{", "]"]),
    st.integers(min_value=0, max_value=200),
)
def test_loader_on_mangled_yaml(value: object, junk: str, where: int) -> None:
    import yaml

    text = yaml.safe_dump({"version": 1, "vars": {"v": value}})
    where = min(where, len(text))
    mangled = text[:where] + junk + text[where:]
    try:
        load_text(mangled, "m.yaml")
    except PipelineValidationError as exc:
        assert all(i.line is None or i.line >= 1 for i in exc.issues)


# ------------------------------------------------------------------ interrupts
_SLOW = """version: 1
name: slow
matrix:
  ranks: [4, 8, 16, 32, 6, 12, 24, 10, 20, 14]
  size: [1KiB, 64KiB, 1MiB, 4MiB]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: "${ranks}"}}
  direct: {producer: hub.direct, params: {collective: allreduce, ranks: "${ranks}"}}
consumers:
  sim: {use: hub.simulate, params: {network: "ring:${ranks}", size: "${size}"}}
"""


def _interrupted_run(tmp: Path, signals: list[tuple[float, int]]) -> tuple[int, str]:
    (tmp / "slow.yaml").write_text(_SLOW)
    env = dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_LOAD_PLUGINS="", COLLHUB_CACHE_DIR=str(tmp / ".cache"))
    p = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "run", "slow.yaml", "--jobs", "2", "-o", "out"],
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    for delay, sig in signals:
        time.sleep(delay)
        try:
            os.killpg(p.pid, sig)  # the whole group, as a terminal's Ctrl-C or timeout(1) does
        except ProcessLookupError:
            break
    _, err = p.communicate(timeout=60)
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):  # no worker outlives the run
        os.killpg(p.pid, 0)
    return p.returncode, err


@pytest.mark.parametrize("kind", ["double-sigint", "sigterm", "sigint-then-sigterm"])
def test_interrupt_at_a_random_moment_leaves_complete_or_absent(kind: str, tmp_path: Path) -> None:
    rng = random.Random()
    for attempt in range(2):
        tmp = tmp_path / str(attempt)
        tmp.mkdir()
        first = rng.uniform(0.4, 2.5)
        second = rng.uniform(0.005, 0.02)
        sigs = {
            "double-sigint": [(first, signal.SIGINT), (second, signal.SIGINT)],
            "sigterm": [(first, signal.SIGTERM)],
            "sigint-then-sigterm": [(first, signal.SIGINT), (second, signal.SIGTERM)],
        }[kind]
        rc, err = _interrupted_run(tmp, sigs)
        names = sorted(p.name for p in tmp.iterdir() if p.name not in ("slow.yaml", ".cache"))
        context = f"delay {first:.3f}s rc {rc}: {err[-500:]}"
        assert names in ([], ["out"]), context  # never a .out.tmp-* directory
        if names:  # complete, or marked incomplete and resumable
            assert (tmp / "out" / "results.json").is_file() != (tmp / "out" / "INCOMPLETE").is_file(), context
            assert (tmp / "out" / "rows.jsonl").is_file(), context
        # Killed while Python itself was starting, or stopped while the CLI imported Typer (its
        # start-up handler, hub/cli/__init__.py) or Typer parsed the command line (Typer's own
        # handling): those exit 130 at once, printing nothing. All before anything exists; a slow
        # machine's start-up can outlast the shortest delay.
        if rc in (-signal.SIGINT, -signal.SIGTERM) or (rc == 130 and err == ""):
            assert names == [] and "hub" not in err, context
            continue
        assert rc in (0, 130), context
        assert "Traceback" not in err, context
        if rc == 130 and (tmp / "out" / "results.json").is_file():  # stopped while printing the results
            assert err.strip().splitlines()[-1] == "error: interrupted", context
        elif rc == 130:
            assert err.strip().splitlines()[0] == "error: interrupted", context
