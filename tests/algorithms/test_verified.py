"""Every algorithm x supported collective x rank count is proven correct by hub.verify."""

from __future__ import annotations

import pytest

from hub.algorithms import CATALOG, make
from hub.verify import check, verify

RANKS = (2, 3, 4, 5, 8, 16, 64)
ROOTED = {"broadcast", "reduce", "gather", "scatter"}


def _cases() -> list[tuple[str, str, int]]:
    cases = []
    for name, colls in sorted(CATALOG.items()):
        for coll in sorted(colls):
            for n in RANKS:
                if name == "halving_doubling" and n & (n - 1) and coll != "allreduce":
                    continue  # only the all-reduce folds non-powers of two in
                cases.append((name, coll, n))
    return cases


@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "outofplace"])
@pytest.mark.parametrize(("name", "coll", "n"), _cases(), ids=lambda v: str(v))
def test_default_parameters_verify(name: str, coll: str, n: int, inplace: bool) -> None:
    opts: dict[str, object] = {"inplace": inplace}
    if coll in ROOTED:
        opts["root"] = (n * 2) // 3  # a root other than 0 exercises the relabelling
    alg = make(name, coll, n, **opts)
    report = verify(alg)
    assert report.ok, [str(p) for p in report.problems[:5]]
    assert report.levels_checked == ["structure", "progress", "semantics"]


@pytest.mark.parametrize("coll", sorted(CATALOG["ring"]))
@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize(
    "opts",
    [
        {"channels": 2},
        {"pipeline": 3},
        {"channels": 3, "pipeline": 2, "bidirectional": True},
        {"channels": 2, "bidirectional": True, "inplace": False, "reduction_comp": False},
    ],
    ids=["ch2", "pipe3", "ch3-pipe2-bidir", "ch2-bidir-oop-nocomp"],
)
def test_ring_variants_verify(coll: str, n: int, opts: dict[str, object]) -> None:
    if coll in ROOTED:
        opts = {**opts, "root": n - 1}
    check(make("ring", coll, n, **opts))


@pytest.mark.parametrize("coll", sorted(CATALOG["hierarchical"]))
@pytest.mark.parametrize(("n", "local"), [(4, 1), (4, 4), (6, 2), (6, 3), (12, 4), (16, 8), (64, 8)])
@pytest.mark.parametrize("inplace", [True, False])
def test_hierarchical_local_sizes_verify(coll: str, n: int, local: int, inplace: bool) -> None:
    check(make("hierarchical", coll, n, local_size=local, inplace=inplace))


@pytest.mark.parametrize("coll", sorted(CATALOG["double_binary_tree"]))
@pytest.mark.parametrize("n", [2, 3, 6, 7, 12, 33])
@pytest.mark.parametrize("pipeline", [1, 4])
def test_tree_pipelines_and_roots_verify(coll: str, n: int, pipeline: int) -> None:
    for root in {0, 1, n - 1}:
        check(make("double_binary_tree", coll, n, pipeline=pipeline, root=root, reduction_comp=pipeline == 1))


@pytest.mark.parametrize("coll", sorted(CATALOG["direct"] & ROOTED))
@pytest.mark.parametrize("n", [2, 5])
def test_direct_every_root_verifies(coll: str, n: int) -> None:
    for root in range(n):
        for inplace in (True, False):
            check(make("direct", coll, n, root=root, inplace=inplace))
