"""The hub.simulate rows of the scale benchmark (issue #19): whole processes from files on disk.

    python benchmarks/bench_scale.py               # the whole scale table, these rows included
    python benchmarks/scale_sim.py                 # these rows alone (4096 ranks and more: scale_big.py)

Rows are functions in ``ROWS``; each writes its inputs to a temporary folder, times whole
processes (``_rusage.measure``: wall, user + system CPU, peak RSS of that process alone) and returns
``Row`` objects with the figure, its reference and the ratio. The machine may be shared, so CPU
seconds are the figure to compare; wall seconds are printed beside them.

Simulate rows (``hub.simulate``, pipelined ring all-reduce of 64 MiB, 2(n-1) steps per rank, as
``bench_sim.py`` builds it; checked against the closed form 2(n-1)*floor(L + (S/n)/B')):

* 1024 ranks aware / unaware: ``collhub consume hub.simulate`` on ETs written by
  ``hub.chakra.write_algorithm``; reference: the target (3 s, 1.5 GiB peak), ratio = target / figure;
* the same, split: ``simulate()`` alone after ``read_algorithm`` in one process (the simulator's
  own share; reading is the codec's), against the pure-Python event loop it replaced;
* 256 ranks aware / unaware against the real ASTRA-sim binary on the same bundle
  (``$COLLHUB_ASTRASIM_DIR``, tests/sim/difftest.py), ratio = ASTRA-sim CPU s / ours (target >= 20x), same ns checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _rusage import measure  # noqa: E402  (needs the path above)

SIZE = 64 << 20
TARGET_S = 3.0
TARGET_MIB = 1536.0


@dataclass
class Row:
    name: str
    wall: float
    cpu: float
    mib: float
    reference: str  # what the ratio compares against
    ratio: float  # > 1 = better than the reference
    ok: bool | None  # against the row's target; None = no target
    note: str = ""


def _collhub() -> str:
    return str(Path(sys.executable).parent / "collhub")


def _write_ring(n: int, prefix: Path) -> None:
    """The bench_sim ring, bound to 64 MiB, written as ETs (in a child: its memory is not ours)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[3]); from bench_sim import ring_allreduce; "
        "from hub.chakra import write_algorithm; "
        f"write_algorithm(ring_allreduce(int(sys.argv[1]), {SIZE}), sys.argv[2])"
    )
    subprocess.run([sys.executable, "-c", code, str(n), str(prefix), str(ROOT / "benchmarks")], check=True)


def _simulate(prefix: Path, n: int, mode: str) -> tuple[float, float, float, int]:
    wall, cpu, mib, text = measure(
        [
            _collhub(),
            "consume",
            "hub.simulate",
            str(prefix),
            "-s",
            f"network=ring:{n}",
            "-s",
            f"mode={mode}",
            "-f",
            "json",
        ]
    )
    return wall, cpu, mib, int(json.loads(text)["metrics"]["time_ns"])


def simulate_1024(tmp: Path) -> list[Row]:
    from bench_sim import expected_ns

    n = 1024
    prefix = tmp / "ring1024" / "ring"
    prefix.parent.mkdir()
    _write_ring(n, prefix)
    rows = []
    for mode in ("aware", "unaware"):
        wall, cpu, mib, ns = _simulate(prefix, n, mode)
        exact = ns == expected_ns(n, SIZE)
        rows.append(
            Row(
                f"simulate {n} ring {mode}",
                wall,
                cpu,
                mib,
                f"target {TARGET_S:g} s / {TARGET_MIB:g} MiB",
                TARGET_S / cpu,
                exact and cpu <= TARGET_S and mib <= TARGET_MIB,
                f"{ns} ns{'' if exact else ' NOT the closed form'}; peak {mib / TARGET_MIB:.2f}x target",
            )
        )
    return rows


_SPLIT = """
import json, resource, sys, time
from hub.chakra import read_algorithm
from hub.sim import simulate
t0 = time.process_time()
alg = read_algorithm(sys.argv[1])
out = {"read": time.process_time() - t0}
for mode in ("aware", "unaware"):
    t0 = time.process_time()
    out[mode] = time.process_time() - t0 if simulate(alg, sys.argv[2], mode=mode) else 0.0
out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""
# the pure-Python event loop this engine replaced, `simulate` CPU s on the same ring (docs/simulator.md)
_BEFORE = {"aware": 11.0, "unaware": 5.6}


def simulate_1024_split(tmp: Path) -> list[Row]:
    """What the simulator itself costs: ``simulate()`` after ``read_algorithm`` in one process."""
    n = 1024
    prefix = tmp / "ring1024" / "ring"
    prefix.parent.mkdir()
    _write_ring(n, prefix)
    _, _, mib, text = measure([sys.executable, "-c", _SPLIT, str(prefix), f"ring:{n}"])
    r = json.loads(text)
    return [
        Row(
            f"  simulate() only, {mode}",
            float("nan"),
            r[mode],
            mib,
            f"pure Python {_BEFORE[mode]:g} s",
            _BEFORE[mode] / r[mode],
            None,
            f"read_algorithm {r['read']:.2f} s in the same process",
        )
        for mode in ("aware", "unaware")
    ]


def simulate_256_vs_astrasim(tmp: Path) -> list[Row]:
    from bench_sim import ring_allreduce

    from collhub_astrasim._bundle import _dims_for, build_bundle
    from collhub_astrasim._parse import parse_output
    from tests.sim.difftest import BIN, BINARIES, oracle_unavailable

    why = oracle_unavailable()
    if why:
        return [Row("simulate 256 vs ASTRA-sim", 0, 0, 0, "ASTRA-sim", float("nan"), None, f"skipped: {why}")]
    n = 256
    bundle = build_bundle(ring_allreduce(n, SIZE), out=tmp / "b256", dims=_dims_for(f"ring:{n}"), predict=False)
    prefix = bundle.path / "algorithm" / "custom_allreduce"
    rows = []
    for mode in ("aware", "unaware"):
        wall, cpu, mib, ns = _simulate(prefix, n, mode)
        twall, tcpu, tmib, text = measure([str(BIN / BINARIES[mode]), *bundle.args()], cwd=bundle.path)
        same = parse_output(text).time_ns == ns
        rows.append(
            Row(
                f"simulate {n} ring {mode}",
                wall,
                cpu,
                mib,
                f"ASTRA-sim {tcpu:.2f} s / {tmib:.0f} MiB",
                tcpu / cpu,
                same and tcpu / cpu >= 20,
                f"same ns: {'yes' if same else 'NO'}; wall {twall / wall:.1f}x",
            )
        )
    return rows


ROWS: list[Callable[[Path], list[Row]]] = [simulate_1024, simulate_1024_split, simulate_256_vs_astrasim]


def main(argv: list[str]) -> int:
    rows_fns = ROWS
    print(f"{'row':<28} {'wall s':>7} {'cpu s':>7} {'peak MiB':>8} {'ratio':>7}  {'reference':<28} {'ok':>3}  note")
    failed = False
    for fn in rows_fns:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
            try:
                rows = fn(Path(tmp))
            except Exception as exc:  # one failing row must not hide the others
                print(f"{fn.__name__:<28} FAILED: {exc}", flush=True)
                failed = True
                continue
        for r in rows:
            ok = "-" if r.ok is None else ("yes" if r.ok else "NO")
            failed |= r.ok is False
            print(
                f"{r.name:<28} {r.wall:>7.2f} {r.cpu:>7.2f} {r.mib:>8.0f} {r.ratio:>6.1f}x  {r.reference:<28} "
                f"{ok:>3}  {r.note}",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
