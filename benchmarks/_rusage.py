"""Time one whole process: wall, CPU and peak memory of that process alone (the scale benchmark's rows).

Linux carries a process's peak RSS across ``exec``: a child's ``ru_maxrss`` is at least the RSS its
parent had when it spawned it. A benchmark that has built a large algorithm in memory would
report that for every child, so each child is started by a fresh, small launcher interpreter
(``python -I -S``, ~10 MiB) that spawns the command and reads its ``os.wait4`` rusage: the figure
is then the child's own (never below the launcher's ~10 MiB).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["measure"]

_LAUNCH = """\
import os, sys, time
t = time.perf_counter()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
wall, cpu, code = time.perf_counter() - t, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)
sys.stderr.write(f"\\n@@rusage {wall} {cpu} {ru.ru_maxrss} {code}\\n")
"""


def measure(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, float, str]:
    """Run ``cmd`` to completion: (wall s, CPU s (user + system), peak RSS MiB, stdout) of that
    process alone. Raises RuntimeError naming the command and its last error line when it fails."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _LAUNCH, *cmd], cwd=cwd, capture_output=True, text=True, check=False
    )
    lines = proc.stderr.splitlines()
    stats = [ln for ln in lines if ln.startswith("@@rusage ")]
    if not stats:
        raise RuntimeError(f"{Path(cmd[0]).name}: the launcher failed: {proc.stderr.strip()[-400:]}")
    wall, cpu, rss, code = stats[-1].split()[1:]
    if int(code):
        errors = [ln for ln in lines if ln.strip() and not ln.startswith("@@rusage ")]
        raise RuntimeError(f"{Path(cmd[0]).name} exited with {code}: {errors[-1:] or ''}")
    return float(wall), float(cpu), float(rss) / 1024, proc.stdout
