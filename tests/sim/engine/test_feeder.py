"""The feeder's issue order: libstdc++ hash-set iteration order (hub/sim/_engine/feeder.py).

Expected orders come from g++'s own ``std::unordered_set<uint64_t>`` (compiled and run here when
g++ is available), plus values recorded from it for machines without a compiler.
"""

from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest

from hub.sim._engine.feeder import FreeSet, insert_order, insert_order_np, next_bucket_count

_CXX = r"""
#include <unordered_set>
#include <cstdio>
#include <cstdint>
int main() {  // "i k": insert, "e k": erase, "p": print the iteration order of a copy
  std::unordered_set<uint64_t> s; char op[4]; unsigned long long k;
  while (scanf("%3s", op) == 1) {
    if (op[0] == 'i') { scanf("%llu", &k); s.insert(k); }
    else if (op[0] == 'e') { scanf("%llu", &k); s.erase(k); }
    else { std::unordered_set<uint64_t> c = s; for (auto x : c) printf("%llu ", (unsigned long long)x);
           printf("| %zu\n", s.bucket_count()); }
  }
}
"""


def test_recorded_orders():
    assert insert_order([1, 2, 14])[0] == [2, 14, 1]  # 14 joins bucket 1 after its predecessor
    assert insert_order([5, 9])[0] == [9, 5]  # two keys: always newest first
    assert [next_bucket_count(n) for n in (1, 12, 26, 58, 118)] == [2, 13, 29, 59, 127]
    order, buckets, _ = insert_order(list(range(14)))  # the 14th key grows 13 -> 29 buckets:
    assert buckets == 29 and order == [13, *range(13)]  # the rehash re-inserts 12..0, reversing them


@pytest.fixture(scope="module")
def unordered_set(tmp_path_factory):
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("g++ not available: cannot build the std::unordered_set reference")
    d = tmp_path_factory.mktemp("cxx")
    (d / "order.cc").write_text(_CXX)
    subprocess.run([cxx, "-O1", "-o", str(d / "order"), str(d / "order.cc")], check=True, timeout=120)
    return d / "order"


def test_against_libstdcxx(unordered_set):
    rng = random.Random(7)
    script, expected = [], []
    for _ in range(40):  # one drained set, refilled batch after batch (as the feeder does)
        fs = FreeSet()
        for _batch in range(3):
            m = rng.choice([1, 2, 3, 12, 13, 14, 29, 30, 200])
            keys = rng.sample(range(max(m, rng.choice([40, 10**6, 1 << 40]))), m)
            script += [f"i {k}" for k in keys] + ["p"] + [f"e {k}" for k in keys]
            expected.append([keys[i] for i in fs.order(keys)])
            if _batch == 0:
                assert insert_order_np(np.asarray(keys, dtype=np.uint64)).tolist() == expected[-1]
        script.append("RESET")
    got = []
    for chunk in "\n".join(script).split("RESET"):
        if chunk.strip():
            out = subprocess.run([str(unordered_set)], input=chunk, capture_output=True, text=True, timeout=60).stdout
            got += [[int(x) for x in line.split("|")[0].split()] for line in out.splitlines()]
    assert got == expected


def test_child_order_vectorized_equals_one_freeset_per_list():
    """_child_order (lists of one length as matrix rows, reordered at each rehash) against
    _child_order_ref (FreeSet, the rule test_against_libstdcxx holds to g++), across the growth
    points 13 -> 29 -> 59 -> 127 and keys up to 2^64 - 1."""
    from hub.sim._engine.feeder import _child_order, _child_order_ref

    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(1, 40))
        cnt = rng.choice([0, 1, 2, 3, 4, 12, 13, 14, 28, 29, 30, 59, 60, 128, 300], size=n)
        sp = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(cnt, out=sp[1:])
        nn = int(sp[-1]) + 50
        si = np.concatenate([np.zeros(0, np.int32)] + [np.sort(rng.choice(nn, size=c, replace=False)) for c in cnt])
        si = si.astype(np.int32)
        high = [nn, 1 << 40, 1 << 64][trial % 3]
        ids = np.unique(rng.integers(0, high, size=2 * nn, dtype=np.uint64))[:nn]
        ids = rng.permutation(ids) if ids.size == nn else np.arange(nn, dtype=np.uint64)
        assert _child_order(sp, si, ids).tolist() == _child_order_ref(sp, si, ids).tolist(), trial


def test_repeated_ids_are_found_as_np_unique_finds_them():
    from hub.sim._engine.feeder import _has_repeats

    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 5, 100, 1000):
        for high in (3, 50, 1 << 40):
            ids = rng.integers(0, high, size=n, dtype=np.int64).astype(np.uint64)
            assert _has_repeats(ids) == (np.unique(ids).size != ids.size), (n, high)


def test_a_rank_with_a_repeated_id_is_refused_by_the_feeder():
    from hub.algorithms import make
    from hub.chakra import Algorithm
    from hub.errors import SimulationError
    from hub.sim import simulate

    alg = make("ring", "allreduce", 4).bind(1 << 20)
    g = alg.graphs[2].copy()
    g.ids[3] = g.ids[1]
    bad = Algorithm(alg.meta, tuple(g if r == 2 else h for r, h in enumerate(alg.graphs)))
    for mode in ("unaware", "aware"):
        with pytest.raises(SimulationError, match="rank 2: node ids are not unique"):
            simulate(bad, "ring:4", mode=mode)


def _roots_with_a_free_node_at(alg, rank: int, pos: int):
    """``alg`` with node ``pos`` of ``rank`` made dependency-free (one more root, same length)."""
    from hub.chakra import Algorithm, RankGraph

    g = alg.graphs[rank]
    keep = [[int(d) for d in g.deps_of(i)] if i != pos else [] for i in range(len(g))]
    ptr = np.zeros(len(g) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in keep], out=ptr[1:])
    pos_ = np.asarray([d for k in keep for d in k], dtype=np.int32)
    cols = {c: getattr(g, c) for c in ("kind", "peer", "tag", "size", "count", "ids")}
    h = RankGraph.from_columns(len(g), **cols, dep_ptr=ptr, dep_pos=pos_)
    return Algorithm(alg.meta, tuple(h if r == rank else x for r, x in enumerate(alg.graphs)))


@pytest.mark.parametrize("change", ["none", "ids", "roots"])
def test_ranks_like_rank_0_get_rank_0s_roots_and_others_their_own(change, monkeypatch):
    from hub.algorithms import make
    from hub.chakra import Algorithm
    from hub.sim._engine import feeder as _feeder
    from hub.sim._engine.program import program_from_algorithm

    alg = make("ring", "allreduce", 6).bind(1 << 20)
    if change == "ids":  # rank 3: the same length, other node ids
        g = alg.graphs[3].copy()
        g.ids = g.ids[::-1].copy()
        alg = Algorithm(alg.meta, tuple(g if r == 3 else h for r, h in enumerate(alg.graphs)))
    elif change == "roots":  # rank 3: the same ids, one more root
        alg = _roots_with_a_free_node_at(alg, 3, len(alg.graphs[3]) - 1)
    fast = _feeder.feeder_program(program_from_algorithm(alg))
    like = _feeder._like_first_rank
    monkeypatch.setattr(_feeder, "_like_first_rank", lambda ids, roots, counts: np.zeros(counts.size, dtype=bool))
    slow = _feeder.feeder_program(program_from_algorithm(alg))
    assert np.array_equal(fast[3], slow[3]) and fast[4] == slow[4]
    prog = program_from_algorithm(alg)
    counts = np.bincount(np.asarray(prog.rank), minlength=alg.ranks)
    found = like(np.frombuffer(prog.local_id, dtype=np.uint64), np.asarray(prog.indeg) == 0, counts)
    assert found.tolist() == [r != 3 or change == "none" for r in range(6)]


def test_blocked_scans_equal_whole_column_scans(monkeypatch):
    """The blocked scans (hub.sim._engine.program.BLOCK nodes at a time) answer as a whole-column scan,
    at every block boundary."""
    import numpy as np

    from hub.sim._engine import feeder as _feeder, program as _program

    rng = np.random.default_rng(7)
    for block in (1, 2, 3, 5, 64):
        monkeypatch.setattr(_feeder, "BLOCK", block)
        monkeypatch.setattr(_program, "BLOCK", block)
        for size in (0, 1, 2, 7, 40):
            si = rng.integers(0, 6, size)
            want = bool((si[1:] == si[:-1]).any()) if size > 1 else False
            assert _feeder._neighbours_repeat(si) == want
            sp = np.concatenate([[0], np.cumsum(rng.integers(0, 4, size))])
            assert _feeder._longest_list(sp) == (int(np.diff(sp).max()) if size else 0)
            kind = rng.choice([_program.K_SEND, _program.K_RECV, _program.K_COMP], size).astype(np.int32)
            rank = rng.integers(0, 4, size).astype(np.int32)
            peer = rng.integers(-1, 5, size).astype(np.int32)
            tag = rng.integers(-1, 3, size).astype(np.int64)
            sz = rng.integers(-1, 3, size).astype(np.int64)
            comm = (kind == _program.K_SEND) | (kind == _program.K_RECV)
            bad = (comm & ((sz < 0) | (peer < 0) | (peer >= 4) | (peer == rank))) | (tag < 0)
            assert _program._clean(kind, rank, peer, tag, sz, 4) == (not bad.any())


def _fanout_algorithm(seed: int):
    """Random fan-outs of 1..40 children per node, with scattered node ids (so buckets collide), and a
    message per rank pair between the layers, so that releases of every size meet free sets of
    every growth state."""
    import random

    from hub.chakra import AlgorithmMeta, Buffer, Collective, RankGraphBuilder, build_algorithm

    rng = random.Random(seed)
    n = 4
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        ids = rng.sample(range(1, 10**6), 400)
        layer = [b.comp(deps=[], duration_micros=1, id=ids.pop())]
        for _ in range(3):
            nxt = []
            for p in layer[:3]:
                for _ in range(rng.randint(1, 40)):
                    nxt.append(b.comp(deps=[p], duration_micros=rng.randint(0, 2), id=ids.pop()))
            s = b.send((r + 1) % n, src=(Buffer.INPUT, 0), size=1 << 10, deps=[nxt[0]], id=ids.pop())
            v = b.recv((r - 1) % n, dst=(Buffer.INPUT, 0), size=1 << 10, deps=[nxt[-1]], id=ids.pop())
            layer = [v, s, *nxt[1:3]]
        builders.append(b)
    return build_algorithm(AlgorithmMeta(Collective.ALLREDUCE, n, n, n, size=n << 10, name="fanout"), builders)


@pytest.mark.parametrize("seed", range(6))
def test_native_release_order_equals_the_callback(seed, monkeypatch):
    """The event loop's own order of releases that do not grow the free set (``rule_native`` in
    hub/_native/_sim.c) equals FreeSet's (the Python rule), node for node, and takes most releases
    off the callback."""
    from hub.sim._engine import feeder as _feeder, loop as _engine
    from hub.sim._engine.program import program_from_algorithm

    calls = [0]
    order = _feeder.FreeSet.order

    def counting(self, keys):
        calls[0] += 1
        return order(self, keys)

    monkeypatch.setattr(_feeder.FreeSet, "order", counting)
    alg = _fanout_algorithm(seed)
    got = []
    for native in (True, False):
        monkeypatch.setattr(_engine, "NATIVE_ORDER", native)
        calls[0] = 0
        st = _engine.run_engine(program_from_algorithm(alg), delay=lambda s, d, z: z // 10 + 7, order=True)
        got.append((st.order.tolist(), st.fin.tolist(), calls[0]))
    assert got[0][:2] == got[1][:2]
    assert got[0][2] < got[1][2]
