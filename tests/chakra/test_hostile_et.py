"""Hostile Chakra ET inputs and output targets through the real CLI (issue #11).

Every case of :mod:`.hostile_et_corpus` runs ``collhub`` in a subprocess under an address-space
limit and a timeout, and must end with the documented exit code, exactly one ``error:`` line
naming what the case names (file, rank, node, attribute), a ``hint:`` line, no traceback, no
new files (or only what the case allows), within the time and memory bounds. Output cases that
succeed (exit 0) check what they wrote: a whole set, files 0644 and directories 0755.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from .hostile_et_corpus import CASES, Case

#: address space of one collhub process (numpy, typer and pydantic need ~0.5 GiB of it)
_AS_LIMIT = 2 << 30
#: wall-clock seconds one command may take (it takes about one on a quiet machine)
_TIMEOUT = 60


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT))
    os.umask(0o022)


def run_collhub(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",
        "COLLHUB_LOAD_PLUGINS": "collhub_mscclang,collhub_astrasim",
        **(env or {}),
    }
    full_env.pop("COLLHUB_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *argv],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        preexec_fn=_limits,
    )


def _listing(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@dataclass
class _Ran:
    work: Path
    before: set[str]
    proc: subprocess.CompletedProcess[str] | None = None
    elapsed: float = 0.0


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Ran]:
    """Every case's inputs, built here, and its collhub process, all run a few at a time (one
    process takes ~0.4 s of CPU, mostly imports: run one by one they would take minutes)."""
    out: dict[str, _Ran] = {}
    jobs = []
    for i, case in enumerate(CASES):
        work = tmp_path_factory.mktemp(f"hostile{i}")
        argv = case.make(work)
        out[case.name] = _Ran(work, _listing(work))
        jobs.append((case, argv, out[case.name]))

    def one(job: tuple[Case, list[str], _Ran]) -> None:
        case, argv, r = job
        t0 = time.monotonic()
        r.proc = run_collhub(argv, r.work, case.env)
        r.elapsed = time.monotonic() - t0

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, jobs))
    return out


@pytest.mark.parametrize("case", CASES, ids=[f"{c.category}:{c.name}" for c in CASES])
def test_hostile_input_is_refused_cleanly(case: Case, ran: dict[str, _Ran]) -> None:
    r = ran[case.name]
    proc, work = r.proc, r.work
    assert proc is not None
    err = proc.stderr
    assert proc.returncode == case.code, (proc.returncode, err, proc.stdout)
    assert "Traceback" not in err and "Traceback" not in proc.stdout, err
    if case.code == 0:  # an output case that must succeed: whole outputs with the usual modes
        assert "error:" not in err, err
        assert case.after is not None
        case.after(work)
        return
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err
    for needle in case.needles:
        assert needle in errors[0], (needle, errors[0])
    assert any(line.startswith("hint: ") for line in err.splitlines()), err
    assert "internal error" not in err and "this is a bug" not in err, err
    if case.after is not None:
        case.after(work)
    else:  # a failed command leaves nothing behind
        assert _listing(work) == r.before, sorted(_listing(work) - r.before)
    assert r.elapsed < _TIMEOUT


def test_corpus_covers_every_category() -> None:
    counts = {c: sum(1 for x in CASES if x.category == c) for c in ("resources", "values", "outputs", "cli")}
    assert all(counts.values()), counts
    assert len({c.name for c in CASES}) == len(CASES)
