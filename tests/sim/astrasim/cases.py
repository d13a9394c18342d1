"""Random native-collective set-ups for the differential against the real binaries
(tests/sim/astrasim/test_algorithms.py and benchmarks/bench_native.py draw from the same generator)."""

from __future__ import annotations

import math
import random
from typing import Any

from hub.chakra import Collective

from .test_ring import BASE

__all__ = ["ALGOS", "STEM", "random_setup"]

STEM = {
    Collective.ALLREDUCE: "all-reduce",
    Collective.ALLGATHER: "all-gather",
    Collective.REDUCESCATTER: "reduce-scatter",
    Collective.ALLTOALL: "all-to-all",
}
#: the implementations hub.simulate reproduces per collective (docs/simulator.md, "Native collectives")
ALGOS: dict[Collective, tuple[str, ...]] = {
    Collective.ALLREDUCE: ("ring", "direct", "halvingDoubling", "doubleBinaryTree"),
    Collective.ALLGATHER: ("ring", "direct", "halvingDoubling", "doubleBinaryTree"),
    Collective.REDUCESCATTER: ("ring", "direct", "halvingDoubling", "doubleBinaryTree"),
    Collective.ALLTOALL: ("ring", "direct", "doubleBinaryTree"),
}
_POW2 = frozenset({"halvingDoubling", "doubleBinaryTree"})


def random_setup(rng: random.Random, max_dims: int = 3) -> tuple[str, dict[str, Any], Collective, int, list[int], str]:
    """``(network, system.json, collective, NPUs, two sizes, label)``: one implementation per
    dimension drawn for the collective, 1 to ``max_dims`` dimensions (3 for all-reduces only),
    powers of two where the algorithm needs them, random settings; the label names the
    algorithms, the collective and the features."""
    coll = rng.choice(list(ALGOS))
    top = max_dims if coll is Collective.ALLREDUCE else min(max_dims, 2)
    nd = rng.choice((1, 1, 2, 2, 3) if top == 3 else (1, 2)[:top])
    impls = [rng.choice(ALGOS[coll]) for _ in range(nd)]
    sizes = [rng.choice((2, 4)) if a in _POW2 else rng.choice((2, 3, 4)) for a in impls]
    if nd == 1:
        sizes = [rng.choice((4, 8) if impls[0] in _POW2 else (3, 4, 6, 8))]
    # (directN: a window below, at or above n-1, drawn for a third of the direct entries)
    impls = [
        f"direct{rng.randint(1, m)}" if a == "direct" and rng.random() < 1 / 3 else a
        for a, m in zip(impls, sizes, strict=True)
    ]
    kinds = ("ring", "switch", "fc")
    net = ",".join(
        f"{rng.choice(kinds if m > 2 else kinds[1:])}:{m}@bw={rng.choice((25, 50, 100))},lat={rng.choice((100, 500))}"
        for m in sizes
    )  # (the aware binary aborts on a 2-NPU Ring)
    system = {
        **BASE,
        f"{STEM[coll]}-implementation": impls,
        "preferred-dataset-splits": rng.randint(1, 8),
        "active-chunks-per-dimension": rng.randint(1, 3),
        "collective-optimization": rng.choice(("baseline", "localBWAware")),
        "endpoint-delay": rng.randint(1, 20),
        "local-mem-bw": rng.choice((50, 400, 1600)),
        "scheduling-policy": rng.choice(("LIFO", "FIFO")),
    }
    colls = [rng.choice((rng.randint(8, 5000), rng.randint(10_000, 3_000_000))), rng.randint(10_000, 300_000)]
    feature = (
        f"{nd}-D"
        + (", active chunks > 1" if system["active-chunks-per-dimension"] > 1 else "")
        + (", localBWAware" if system["collective-optimization"] == "localBWAware" else "")
    )
    label = f"{'/'.join(dict.fromkeys(impls))} {coll.value} | {feature}"
    return net, system, coll, math.prod(sizes), colls, label
