"""hub.cli._exit: the process ends without finalizing the interpreter only where nothing is lost.

Each case is a real child interpreter; what it must keep (buffered output, atexit handlers,
temporary directories' finalizers, a file left open for writing) is checked from outside."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_PRELUDE = """
import atexit, sys, tempfile, threading
from pathlib import Path
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
kept = tempfile.TemporaryDirectory(dir=out)  # removed by its finalizer, an atexit handler
(out / "tmpdir").write_text(kept.name)
sys.stdout.write("buffered, no newline")  # a pipe: block-buffered until the flush
"""
_CALL = (
    "\nfrom hub.cli._exit import fast_exit\nfast_exit(7)\nsys.stdout.write(' RETURNED')\n"
    "if 'go' in globals():\n    go.set()\n"  # the thread case: let it finish only now
)


def _child(tmp_path: Path, body: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "COLLHUB_NO_FAST_EXIT"}
    environ.update(PYTHONPATH=str(REPO), **env)
    code = _PRELUDE + body + _CALL
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60, env=environ
    )


def _cleaned_up(tmp_path: Path) -> bool:
    return (tmp_path / "atexit").read_text() == "ran" and not Path((tmp_path / "tmpdir").read_text()).exists()


def test_ends_at_once_with_the_code_after_atexit_and_flushing(tmp_path: Path) -> None:
    p = _child(tmp_path, "")
    assert p.returncode == 7, p.stderr
    assert p.stdout == "buffered, no newline"  # flushed, and nothing after the call ran
    assert _cleaned_up(tmp_path)


def test_a_file_left_open_for_writing_keeps_the_usual_exit(tmp_path: Path) -> None:
    p = _child(tmp_path, "leak = open(out / 'leak.txt', 'w'); leak.write('only in the buffer')\n")
    assert p.returncode == 0 and p.stdout.endswith(" RETURNED"), p.stderr
    assert (tmp_path / "leak.txt").read_text() == "only in the buffer"  # the finalizer wrote it
    assert _cleaned_up(tmp_path)


def test_a_file_open_for_reading_does_not_prevent_it(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("x")
    p = _child(tmp_path, "reader = open(out / 'in.txt')\n")
    assert p.returncode == 7 and p.stdout == "buffered, no newline", p.stderr


def test_another_live_thread_keeps_the_usual_exit(tmp_path: Path) -> None:
    body = (
        "go = threading.Event()\n"
        "def late():\n    go.wait(60)\n    (out / 'thread').write_text('finished')\n"
        "threading.Thread(target=late).start()\n"
    )
    p = _child(tmp_path, body)
    assert p.returncode == 0 and p.stdout.endswith(" RETURNED"), p.stderr
    assert (tmp_path / "thread").read_text() == "finished"  # joined by the interpreter, as usual


def test_the_environment_switch_keeps_the_usual_exit(tmp_path: Path) -> None:
    p = _child(tmp_path, "", COLLHUB_NO_FAST_EXIT="1")
    assert p.returncode == 0 and p.stdout.endswith(" RETURNED"), p.stderr


_CANARY = """
import runpy, sys
from pathlib import Path
class Canary:  # its finalizer runs only if the interpreter is torn down
    # bound early (module globals are gone by then); a directory: an open file would itself
    # be a reason for the usual exit
    def __del__(self, path=sys.argv[1], mkdir=__import__("os").mkdir):
        mkdir(path)
canary = Canary()
sys.argv = ["collhub", *sys.argv[2:]]  # as the console script starts
runpy.run_module("hub.cli", run_name="__main__")
"""


def _cli(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COLLHUB_")}
    environ.update(PYTHONPATH=str(REPO), COLLHUB_CACHE_DIR=str(tmp_path / "cache"), **env)
    marker = tmp_path / "finalized"
    p = subprocess.run(
        [sys.executable, "-c", _CANARY, str(marker), *args], capture_output=True, text=True, env=environ, timeout=120
    )
    finalized = marker.is_dir()
    if finalized:
        marker.rmdir()
    return p, finalized


def test_the_cli_takes_it_and_keeps_its_exit_codes_and_output(tmp_path: Path) -> None:
    produce = ["produce", "hub.ring", "-s", "ranks=4", "-s", "collective=allgather"]
    ok, finalized = _cli(tmp_path, *produce, "--out", str(tmp_path / "r"), "--format", "json")
    assert ok.returncode == 0 and ok.stdout.rstrip().endswith("}"), ok.stderr
    assert len(list(tmp_path.glob("r.*.et"))) == 4
    assert not finalized  # ended without tearing the interpreter down
    bad, finalized = _cli(tmp_path, *produce, "-s", "nope=1", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: invalid params for hub.ring"), bad.stderr
    assert not finalized
    _, finalized = _cli(tmp_path, *produce, "--out", str(tmp_path / "r"), COLLHUB_NO_FAST_EXIT="1")
    assert finalized  # the canary itself works
