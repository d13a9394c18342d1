"""Hostile command-line arguments: each a one-line ``error:`` + ``hint:``, its documented exit code,
no traceback and nothing written, in bounded time and memory (real subprocesses)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SIMPLE = "version: 1\nsources:\n  r: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}\n"
BOMB = (
    "[&a [1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], "
    "&d [*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d], &f [*e,*e,*e,*e,*e,*e,*e,*e,*e], "
    "&g [*f,*f,*f,*f,*f,*f,*f,*f,*f]]"
)
RING = ["produce", "hub.ring", "--set", "collective=allreduce", "-o", "out/r"]

CASES = {
    "set-alias-bomb": (RING + ["--set", f"channels={BOMB}"], 2, "expand to more than"),
    "set-deep-nesting": (RING + ["--set", "channels=" + "[" * 3000 + "]" * 3000], 2, "nesting deeper"),
    "set-control-char": (RING + ["--set", "name=a\x01b"], 2, "U+0001"),
    "set-recursive-alias": (RING + ["--set", "channels=&a [*a]"], 2, "recursive alias"),
    "set-int-5000-digits": (RING + ["--set", "channels=" + "9" * 5000], 2, "cannot read the value"),
    "set-long-list-echo": (RING + ["--set", "ranks=[" + ",".join(["1"] * 5000) + "]"], 2, "valid integer"),
    "set-not-key-value": (RING + ["--set", "ranks"], 2, "is not key=value"),
    "run-out-empty": (["run", "p.yaml", "-o", ""], 2, "--out is empty"),
    "run-out-onto-file": (["run", "p.yaml", "-o", "afile", "--force"], 2, "is not a directory"),
    "run-jobs-fork-bomb": (["run", "p.yaml", "-o", "o", "--jobs", "100000"], 2, "worker processes"),
    "run-timeout-zero": (["run", "p.yaml", "-o", "o", "--timeout", "0"], 2, "--timeout"),
    "produce-timeout-negative": (RING + ["--set", "ranks=4", "--timeout", "-1"], 2, "--timeout"),
    "produce-timeout-nan": (RING + ["--set", "ranks=4", "--timeout", "nan"], 2, "--timeout"),
    "validate-missing-file": (["pipeline", "validate", "nope.yaml"], 3, "file not found"),
    "validate-directory": (["pipeline", "validate", "."], 3, "not a regular file"),
    "validate-dev-zero": (["pipeline", "validate", "/dev/zero"], 3, "not a regular file"),
    "unknown-component": (["produce", "nope.nothing", "-o", "out/r"], 4, "unknown component"),
}


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_argument(name: str, tmp_path: Path) -> None:
    args, code, said = CASES[name]
    (tmp_path / "p.yaml").write_text(SIMPLE)
    (tmp_path / "afile").write_text("mine\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), COLLHUB_LOAD_PLUGINS="", COLLHUB_CACHE_DIR=str(tmp_path / ".c"))
    env.pop("COLLHUB_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=30,
        preexec_fn=_limit,
    )
    assert r.returncode == code, r.stderr[-2000:]
    assert "Traceback" not in r.stderr + r.stdout
    text = r.stdout + r.stderr
    assert said in text, text[-2000:]
    if code != 3:  # validate prints its issues on stdout; the rest say error:/hint: on stderr
        assert r.stderr.startswith(("error: ", "Usage: ")), r.stderr[:500]
        assert len(r.stderr) < 2000  # no 17 MB echo of the input
    if r.stderr.startswith("error: "):
        assert any(line.startswith("hint: ") for line in r.stderr.splitlines())
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()
    assert (tmp_path / "afile").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.name != ".c") == []
