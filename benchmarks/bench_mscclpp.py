"""Benchmark of the collhub-mscclpp plugin (MSCCL++ execution plans); prints a table.

Run alone: python benchmarks/bench_mscclpp.py
1. import + hub.verify of the largest shared plan by JSON bytes (the 4x8 multi-node all-gather
   with thread-block groups, ~50k nodes once lowered): target <= 1 s; and of the plan with the most
   nodes once lowered (the 64-rank NVLS zero-copy all-gather, ~213k nodes), against the same 1 s;
2. import + verify of every shared plan the parser accepts (the whole corpus), for scale;
3. export of a 64-rank algorithm (hub.ring all-reduce, 8064 messages) to a plan, Simple and LL,
   with the re-import + verify the consumer runs by default shown separately: target <= 1 s for
   the export itself.
Figures are CPU seconds (time.process_time, best of 3): the machine may be shared.
"""

from __future__ import annotations

import gzip
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLANS = REPO.parent / "shared" / "data" / "mscclpp" / "plans"
_REFUSED = {"unit_switch_reduce.json", "upstream_execfiles_allreduce_pipeline_legacy.json"}


def cpu_best(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def _size(p: Path) -> int:
    raw = p.read_bytes()
    return len(gzip.decompress(raw)) if raw[:2] == b"\x1f\x8b" else len(raw)


def main() -> None:
    from collhub_mscclpp import algorithm_to_plan, parse_plan, plan_to_algorithm, read_plan
    from hub.algorithms import ring
    from hub.errors import HubError
    from hub.verify import verify

    rows: list[tuple[str, str, str, str]] = []
    if PLANS.is_dir():
        plans = [p for p in PLANS.iterdir() if p.name.endswith((".json", ".json.gz")) and p.name != "manifest.json"]
        largest = max(plans, key=_size)
        imp = read_plan(largest)
        n = imp.algorithm.node_count()
        t_imp = cpu_best(lambda: read_plan(largest))
        t_ver = cpu_best(lambda: verify(imp.algorithm))
        total = t_imp + t_ver
        rows.append((f"import {largest.name} ({n} nodes)", f"{t_imp:.3f}", "", ""))
        rows.append(("hub.verify of it", f"{t_ver:.3f}", "", ""))
        rows.append(("import + verify, largest plan", f"{total:.3f}", "1.0", f"{total / 1.0:.2f}x of target"))

        def corpus() -> None:
            for p in plans:
                try:
                    verify(read_plan(p).algorithm, max_problems=1)
                except HubError:
                    pass

        most = max(plans, key=lambda p: read_plan(p).algorithm.node_count() if p.name not in _REFUSED else 0)
        imp = read_plan(most)
        t_m = cpu_best(lambda: verify(read_plan(most).algorithm))
        rows.append(
            (f"import + verify, most nodes: {most.name} ({imp.algorithm.node_count()})", f"{t_m:.3f}", "1.0",
             f"{t_m:.2f}x of target"),
        )  # fmt: skip
        t_all = cpu_best(corpus, repeat=1)
        rows.append((f"import + verify, all {len(plans)} shared plans", f"{t_all:.3f}", "", ""))
    alg = ring("allreduce", 64)
    for proto in ("Simple", "LL"):
        t_exp = cpu_best(lambda proto=proto: algorithm_to_plan(alg, protocol=proto))
        plan, _ = algorithm_to_plan(alg, protocol=proto)
        t_back = cpu_best(lambda plan=plan: verify(plan_to_algorithm(parse_plan(plan)).algorithm), repeat=1)
        rows.append((f"export hub.ring allreduce 64 ranks ({proto})", f"{t_exp:.3f}", "1.0", f"{t_exp:.2f}x of target"))
        rows.append((f"  re-import + verify of that plan ({proto})", f"{t_back:.3f}", "", ""))
    w = max(len(r[0]) for r in rows)
    print(f"{'mscclpp benchmark':<{w}}  {'CPU s':>8}  {'target s':>8}  ratio")
    for name, t, target, ratio in rows:
        print(f"{name:<{w}}  {t:>8}  {target:>8}  {ratio}")


if __name__ == "__main__":
    main()
