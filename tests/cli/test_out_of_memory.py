"""Running out of memory is the input's size, not a bug: one error line, a hint, exit 1, no output.

A real ``collhub produce`` process under an address-space limit (``RLIMIT_AS``, what ``ulimit -v``
sets) 400 MiB above its size after start-up, asked for a 4096-rank ring (about 5 GB)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_UNDER_LIMIT = """
import resource, sys
import numpy
from hub.cli import main
size = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (400 << 20), resource.RLIM_INFINITY))
main(sys.argv[1:])
"""


def test_out_of_memory_is_one_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "ring"
    argv = ["produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4096"]
    argv += ["--set", "max_ranks=4096", "-o", str(out)]
    r = subprocess.run([sys.executable, "-c", _UNDER_LIMIT, *argv], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        "error: out of memory: this input needs more memory than the process may use",
        "hint: try a smaller input, a lower --level (verify), or a machine (or ulimit -v) with more memory",
    ]
    assert not list(tmp_path.glob("ring*"))  # no rank file, whole or partial
