"""``collhub astra-sim`` (the drop-in for ASTRA-sim's analytical binaries), whole processes.

Run alone: ``python benchmarks/bench_astrasim_dropin.py [--ranks 256,1024] [--repeat 3]``.

Input: an ASTRA-sim input set on disk, as a user has it: a pipelined ring all-reduce of 64 MiB as a
custom collective (``hub.ring`` written by ``astrasim.bundle``: workload ETs, ``system.json`` with
``all-reduce-implementation-custom``, ``network.yml`` Ring 50 GiB/s 500 ns, ``memory.json``).
Rows per rank count and backend: ``collhub-astra-sim`` and ``collhub astra-sim`` run from the
folder (wall and CPU s, median of ``--repeat``; peak RSS), start-up alone (``collhub-astra-sim
--help``), and the real binary on the same folder when ``$COLLHUB_ASTRASIM_DIR`` (or
``$COLLHUB_ASTRASIM_BIN``'s folder) holds it: ratio = ASTRA-sim / ours, same output checked. Without
it, the ratio column says so (the recorded runs of ``../shared/data/astra-sim-oracle`` keep the
binaries' output, not their run time).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._rusage import measure  # noqa: E402

BIN = Path(sys.executable).parent
NAMES = {"aware": "AstraSim_Analytical_Congestion_Aware", "unaware": "AstraSim_Analytical_Congestion_Unaware"}
STAMP = re.compile(r"^\[[^\]]*\] ", re.M)


def _real(backend: str) -> Path | None:
    folder = os.environ.get("COLLHUB_ASTRASIM_DIR") or (
        str(Path(os.environ["COLLHUB_ASTRASIM_BIN"]).parent) if os.environ.get("COLLHUB_ASTRASIM_BIN") else ""
    )
    exe = Path(folder) / NAMES[backend] if folder else None
    return exe if exe is not None and exe.is_file() else None


def _inputs(ranks: int, tmp: Path) -> tuple[Path, list[str]]:
    from collhub_astrasim import Dim, build_bundle
    from hub.algorithms import ring

    alg = ring("allreduce", ranks).bind(64 << 20)
    b = build_bundle(alg, out=tmp / f"r{ranks}", dims=[Dim("Ring", ranks, 50, 500)], predict=False, check=False)
    return b.path, b.args()


def _median(cmd: list[str], cwd: Path, repeat: int) -> tuple[float, float, float, str]:
    runs = [measure(cmd, cwd) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        max(r[2] for r in runs),
        runs[-1][3],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", default="256,1024")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-dropin-"))
    try:
        wall, cpu, rss, _ = _median([str(BIN / "collhub-astra-sim"), "--help"], tmp, a.repeat)
        print(f"start-up (collhub-astra-sim --help, whole process): wall {wall:.3f} s, CPU {cpu:.3f} s, {rss:.0f} MiB")
        wall, cpu, rss, _ = _median([str(BIN / "collhub"), "--help"], tmp, a.repeat)
        print(f"for scale, collhub --help: wall {wall:.3f} s, CPU {cpu:.3f} s, {rss:.0f} MiB\n")
        head = (
            f"{'ranks':>5} {'backend':<8} {'command':<18} {'wall s':>7} {'CPU s':>6} {'MiB':>6} "
            f"{'ASTRA-sim CPU s':>15} {'ratio':>7}"
        )
        print(head)
        for ranks in [int(x) for x in a.ranks.split(",")]:
            folder, bundle_args = _inputs(ranks, tmp)
            for backend in ("aware", "unaware"):
                args = [*bundle_args, f"--logging-folder={tmp / 'log'}"]
                real = _real(backend)
                ref_cpu, ref_out = None, None
                if real is not None:
                    _, ref_cpu, _, ref_out = _median([str(real), *args], folder, a.repeat)
                for label, cmd in (
                    ("collhub-astra-sim", [str(BIN / "collhub-astra-sim"), f"--backend={backend}", *args]),
                    ("collhub astra-sim", [str(BIN / "collhub"), "astra-sim", f"--backend={backend}", *args]),
                ):
                    wall, cpu, rss, out = _median(cmd, folder, a.repeat)
                    if ref_out is not None:
                        assert STAMP.sub("", out) == STAMP.sub("", ref_out), f"{label} prints other lines than {real}"
                    ratio = f"{ref_cpu / cpu:.1f}x" if ref_cpu else "no binary"
                    ref = f"{ref_cpu:.2f}" if ref_cpu else "-"
                    print(
                        f"{ranks:>5} {backend:<8} {label:<18} {wall:>7.2f} {cpu:>6.2f} {rss:>6.0f} {ref:>15} {ratio:>7}"
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
