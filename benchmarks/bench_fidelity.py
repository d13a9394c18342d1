"""Differential fidelity: hub.simulate against the real ASTRA-sim binaries, case by case.

    python benchmarks/bench_fidelity.py                      # ~3,500 cases
    python benchmarks/bench_fidelity.py --random 300 --no-corpus --jobs 2 --out /tmp/fidelity

Cases: every built-in algorithm (plain, through hub.chunk and hub.instances, with channels) and
every MSCCL-IR file of ../shared/data on Ring, Switch and FullyConnected in both modes and on
multi-dimensional networks (unaware), in file order and with shuffled node order and ids; then
``--random`` random algorithms from one generator (tests/sim/difftest.py). Prints
matched/total per network and mode, and for the first mismatch writes a shrunk reproducer
(ETs, network, mode, and a runnable ASTRA-sim bundle) to ``--out``. Cases that ASTRA-sim itself
aborts on (assertions in its event queue, e.g. a zero-time event at t = 0) are counted apart.
Exit status 1 when any case differs.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.sim.difftest import Case, corpus_cases, oracle_unavailable, random_cases, run_case, shrink, write_reproducer  # noqa: E402


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=1000, help="random cases after the corpus (default 1000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="ASTRA-sim runs in parallel (default 2)")
    ap.add_argument(
        "--out", type=Path, default=ROOT / "runs" / "fidelity", help="reproducer folder (default runs/fidelity)"
    )
    ap.add_argument("--no-corpus", action="store_true", help="random cases only")
    args = ap.parse_args(argv)
    why = oracle_unavailable()
    if why:
        print(f"skipped: {why}")
        return 0
    rng = random.Random(args.seed)
    corpus = iter(()) if args.no_corpus else corpus_cases(rng, shuffled=True, max_ir_ranks=None)
    cases = chain(corpus, random_cases(args.seed, args.random))
    t0 = time.perf_counter()
    total: Counter[tuple[str, str]] = Counter()
    matched: Counter[tuple[str, str]] = Counter()
    refused: Counter[tuple[str, str]] = Counter()
    reasons: Counter[str] = Counter()
    invalid = 0
    first: tuple[Case, int, int] | None = None
    mismatches = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for case, (ours, theirs) in zip_results(pool, cases):
            cell = (case.family, case.mode)
            if ours is None:
                invalid += 1
            elif isinstance(theirs, str):
                refused[cell] += 1
                reasons[_reason(theirs)] += 1
            else:
                total[cell] += 1
                if ours == theirs:
                    matched[cell] += 1
                else:
                    mismatches += 1
                    if first is None:
                        first = (case, ours, theirs)
    seconds = time.perf_counter() - t0
    print("| network | mode | matched / total | ASTRA-sim aborted |")
    print("|---|---|---|---|")
    for cell in sorted(set(total) | set(refused)):
        print(f"| {cell[0]} | {cell[1]} | {matched[cell]} / {total[cell]} | {refused[cell]} |")
    n_all = sum(total.values())
    print(f"| all | | {sum(matched.values())} / {n_all} | {sum(refused.values())} |")
    print(
        f"\n{n_all} compared cases in {seconds:.0f} s ({args.jobs} parallel ASTRA-sim runs); "
        f"{invalid} generated cases refused by hub.simulate (deadlock) and skipped"
    )
    for why, count in reasons.most_common():
        print(f"ASTRA-sim aborted {count}x: {why}")
    if first is not None:
        case, ours, theirs = first
        print(f"\nfirst mismatch: {case.key()}: hub.simulate {ours} ns, ASTRA-sim {theirs} ns")
        small = shrink(case)
        folder = write_reproducer(small, args.out / "first-mismatch")
        o, t = run_case(small)
        print(f"shrunk to {small.alg.node_count()} nodes ({o} vs {t} ns): {folder}")
        return 1
    return 0


def _reason(error: str) -> str:
    """The failing assertion (or the error's first words) of an ASTRA-sim abort."""
    if "Assertion" in error:
        return "assertion " + error.split("Assertion", 1)[1].strip(" `'.").split("'")[0].strip("`")
    return error[:100]


def zip_results(pool: ThreadPoolExecutor, cases):  # type: ignore[no-untyped-def]
    """(case, result) in order, with at most a few cases in flight (bounded memory)."""
    window: list = []
    for case in cases:
        window.append((case, pool.submit(run_case, case)))
        if len(window) >= 4 * pool._max_workers:  # noqa: SLF001
            c, f = window.pop(0)
            yield c, f.result()
    for c, f in window:
        yield c, f.result()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
