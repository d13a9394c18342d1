"""Records the greedy's schedules as data (``data/greedy_recorded.json``) for
``test_greedy_recorded.py``: per case the makespan, events, replacements, cancellations, the
transfer count and a SHA-256 over the schedule's arrays (chunk, link as int64; start, end as
float64, little-endian, in that order).

The file in the repository was written by this script run on main's code at commit bc01dcc
(before the bitset scan), so the test compares new code against recorded output, not against
itself. Re-run it only to record a deliberate change of schedules, and say so in the commit.

    python plugins/tacos/tests/record_greedy.py [--big]   # --big: also the 64x64 torus (~30 s)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent

#: (topology, chunks per NPU, link model, seed, policy, slow-link rule, reversed network)
CASES: list[tuple[str, int, str, int, str, bool, bool]] = [
    ("torus:4x4", 2, "tacos", 0, "scarce", True, False),
    ("torus:4x4", 2, "tacos", 0, "scarce", True, True),
    ("mesh:4x4@bw=100/25,lat=500/2000", 2, "pipelined", 0, "scarce", True, False),
    ("mesh:4x4@bw=100/25,lat=500/2000", 2, "pipelined", 1, "scarce", False, True),
    ("dgx1", 3, "tacos", 0, "scarce", True, False),
    ("dgx1", 4, "pipelined", 2, "random", True, False),
    ("fattree:2x4", 1, "pipelined", 0, "scarce", True, False),
    ("fattree:4x8", 1, "tacos", 0, "scarce", True, False),
    ("ring:4,switch:2", 2, "tacos", 0, "scarce", True, False),
    ("torus:6x6", 2, "tacos", 3, "random", True, False),
    ("mesh:3x5@bw=100/40,lat=300/900", 2, "tacos", 0, "scarce", True, True),
    ("torus:8x8@bw=50,lat=500", 1, "tacos", 0, "scarce", True, False),
    ("mesh:8x8@bw=50,lat=500", 4, "tacos", 0, "scarce", True, False),
    ("torus:4x4x4@bw=50,lat=500", 4, "tacos", 0, "scarce", True, False),
    ("torus:16x16", 1, "tacos", 0, "scarce", True, False),
    ("torus:16x16", 1, "pipelined", 1, "scarce", True, True),
    ("mesh:16x16", 2, "tacos", 0, "scarce", True, False),
    ("torus:8x8x8", 1, "tacos", 0, "scarce", True, False),
    ("torus:32x32", 1, "tacos", 0, "scarce", True, False),
    ("torus:32x32", 1, "tacos", 1, "scarce", True, False),
    ("mesh:32x32", 1, "pipelined", 0, "scarce", True, False),
]
BIG: list[tuple[str, int, str, int, str, bool, bool]] = [("torus:64x64", 1, "tacos", 0, "scarce", True, False)]


def run_case(
    topology: str, chunks: int, model: str, seed: int, policy: str, rule: bool, rev: bool, compiled: bool = True
) -> dict[str, Any]:
    from collhub_tacos import network_of
    from collhub_tacos._greedy import greedy_allgather
    from hub.topology import load_topology

    net = network_of(load_topology(topology))
    if rev:
        net = net.reversed()
    busy, delay = net.link_times_us((1 << 20) / chunks, model)
    s = greedy_allgather(net, chunks, busy, delay, np.random.default_rng(seed), None, policy, rule, compiled)
    h = hashlib.sha256()
    for a, dt in ((s.chunk, "<i8"), (s.link, "<i8"), (s.start, "<f8"), (s.end, "<f8")):
        h.update(np.ascontiguousarray(a, dtype=dt).tobytes())
    return {
        "makespan": s.makespan,
        "events": s.events,
        "replaced": s.replaced,
        "cancelled": s.cancelled,
        "transfers": int(s.chunk.size),
        "sha256": h.hexdigest(),
    }


def key(case: tuple[str, int, str, int, str, bool, bool]) -> str:
    t, k, m, s, p, r, rev = case
    return f"{t} k={k} {m} seed={s} {p} rule={r}{' reversed' if rev else ''}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true")
    args = ap.parse_args()
    out = HERE / "data" / "greedy_recorded.json"
    old = json.loads(out.read_text()) if out.exists() else {"cases": {}}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    cases = old["cases"]
    for c in CASES + (BIG if args.big else []):
        cases[key(c)] = {"args": list(c), **run_case(*c)}
        print(key(c), cases[key(c)]["makespan"], file=sys.stderr)
    doc = {
        "provenance": f"written by plugins/tacos/tests/record_greedy.py at commit {commit}"
        " (main's greedy, before the bitset scan)",
        "cases": cases,
    }
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
