"""Run ``collhub`` in real subprocesses under a memory cap and a time limit, and check that a failure
is clean: the exit code, one ``error:`` line and a ``hint:`` line, no traceback, nothing on stdout.

:func:`run_many` starts one process per invocation (the real thing, ~0.5 s of start-up each);
:func:`run_batch` runs many invocations of ``hub.cli.main`` one after another inside ONE capped
subprocess, so a corpus of dozens of cases costs one start-up.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MEMORY_CAP", "Ran", "assert_clean", "run_batch", "run_many"]

MEMORY_CAP = 2 << 30  # RLIMIT_AS of each CLI subprocess: a bomb must fail inside it, not take the box
TIME_CAP = 30.0  # seconds; the registry deadline of the cases is far below this


@dataclass(frozen=True)
class Ran:
    args: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str
    wall: float


def _base_env() -> dict[str, str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.pop("COLLHUB_LOAD_PLUGINS", None)  # a case that wants plugins off says so in its env
    return env


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_many(cases: Sequence[tuple[Sequence[str], dict[str, str]]], *, jobs: int = 4) -> list[Ran]:
    """Run ``python -m hub.cli ARGS`` with ``env`` added, for each case, ``jobs`` at a time."""
    base = _base_env()
    results: list[Ran | None] = [None] * len(cases)
    running: list[tuple[int, subprocess.Popen[str], float]] = []
    todo = list(enumerate(cases))
    while todo or running:
        while todo and len(running) < jobs:
            i, (args, env) = todo.pop(0)
            proc = subprocess.Popen(
                [sys.executable, "-m", "hub.cli", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**base, **env},
                preexec_fn=_limit,
            )
            running.append((i, proc, time.monotonic()))
        i, proc, start = running.pop(0)
        try:
            out, err = proc.communicate(timeout=max(0.1, TIME_CAP - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += f"\n<killed after {TIME_CAP} s>"
        results[i] = Ran(tuple(cases[i][0]), proc.returncode, out, err, time.monotonic() - start)
    return [r for r in results if r is not None]


_DRIVER = r"""
import contextlib, io, json, os, sys, tempfile, time
from hub.cli import main
results = []
for args, env in json.load(sys.stdin):
    saved = dict(os.environ)
    os.environ.update(env)
    tempfile.tempdir = None  # re-read TMPDIR
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            rc = 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:  # what escaped the CLI's own handler: a failure of the case
            rc = -1
            err.write(f"Traceback: {type(exc).__name__} escaped main(): {exc}\n")
    os.environ.clear()
    os.environ.update(saved)
    results.append([rc, out.getvalue(), err.getvalue(), time.monotonic() - start])
sys.stdout.write(json.dumps(results))
"""


def run_batch(
    cases: Sequence[tuple[Sequence[str], dict[str, str]]], *, jobs: int = 2, timeout: float = 120.0
) -> list[Ran]:
    """Run every case through ``hub.cli.main`` in ``jobs`` subprocesses, each under :data:`MEMORY_CAP`."""
    base = _base_env()
    shares = [list(range(k, len(cases), jobs)) for k in range(jobs)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _DRIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=base,
            preexec_fn=_limit,
        )
        for _ in shares
    ]
    results: dict[int, Ran] = {}
    try:
        for share, proc in zip(shares, procs, strict=False):  # hand every driver its cases first: they run together
            assert proc.stdin is not None
            proc.stdin.write(json.dumps([[list(cases[i][0]), cases[i][1]] for i in share]))
            proc.stdin.close()
            proc.stdin = None
        for share, proc in zip(shares, procs, strict=False):
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"batch driver failed (rc={proc.returncode}):\n{err[-3000:]}"
            for i, (rc, o, e, wall) in zip(share, json.loads(out), strict=False):
                results[i] = Ran(tuple(cases[i][0]), rc, o, e, wall)
    finally:
        for proc in procs:  # never leave a driver behind, whatever failed
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [results[i] for i in range(len(cases))]


def assert_clean(ran: Ran, rc: int, *, stdout_empty: bool = True) -> None:
    """A clean failure: exit ``rc``, exactly one ``error:`` line, a ``hint:``, no traceback."""
    what = f"collhub {' '.join(ran.args)[:200]}: rc={ran.rc}\n--- stderr\n{ran.stderr[-3000:]}"
    assert ran.rc == rc, what
    lines = ran.stderr.splitlines()
    assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr, what
    assert [ln for ln in lines if ln.startswith("error: ")] != [], what
    assert len([ln for ln in lines if ln.startswith("error: ")]) == 1, what
    assert any(ln.startswith("hint: ") for ln in lines), what
    if stdout_empty:
        assert ran.stdout == "", what
    assert ran.wall < TIME_CAP, what
