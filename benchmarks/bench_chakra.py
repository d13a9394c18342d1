"""Benchmark the Chakra ET writer and reader on a pipelined ring all-reduce.

Run alone: ``python benchmarks/bench_chakra.py [--ranks 1024] [--mlc-nodes 200000]``.
Prints write and read rates (nodes/s), bytes per node on disk, model RAM per node, and the same
rates for MLCommons' ``encodeMessage``/``decodeMessage`` loop (on a subset of the ranks).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hub.chakra import (  # noqa: E402  # noqa: E402
    Algorithm,
    AlgorithmMeta,
    Buffer,
    Collective,
    NodeType,
    Op,
    RankGraph,
    read_algorithm,
    write_algorithm,
)


def ring_allreduce(n: int, size: int | None = 1 << 30) -> Algorithm:
    """A pipelined, in-place ring all-reduce on ``n`` ranks with ``n`` chunks, built column-wise.

    Per rank: step k < n-1 (reduce-scatter) sends chunk (r-k) mod n to r+1 and receives chunk
    (r-k-1) mod n from r-1 with REDUCE; step k >= n-1 (all-gather) sends chunk (r-k+1) mod n and
    receives chunk (r-k) mod n with COPY. Node order S0 R0 S1 R1 ...; S_k depends on R_{k-1} and
    R_k on R_{k-1}.
    """
    steps = 2 * (n - 1)
    m = 2 * steps
    k = np.repeat(np.arange(steps), 2)
    is_send = np.tile([True, False], steps)
    kind = np.where(is_send, NodeType.SEND, NodeType.RECV)
    op = np.where(~is_send & (k < n - 1), Op.REDUCE, np.where(is_send, Op.NONE, Op.COPY))
    # deps: node 2k (send) and 2k+1 (recv) depend on 2k-1 (previous recv), none at k = 0
    has = np.arange(m) >= 2
    dep_ptr = np.concatenate(([0], np.cumsum(has))).astype(np.int64)
    dep_pos = (2 * k - 1)[has].astype(np.int32)
    graphs = []
    for r in range(n):
        send_chunk = np.where(k < n - 1, (r - k) % n, (r - k + 1) % n)
        recv_chunk = np.where(k < n - 1, (r - k - 1) % n, (r - k) % n)
        graphs.append(
            RankGraph.from_columns(
                m,
                dep_ptr=dep_ptr,
                dep_pos=dep_pos,
                kind=kind,
                peer=np.where(is_send, (r + 1) % n, (r - 1) % n),
                count=1,
                src_buf=np.where(is_send, Buffer.INPUT, Buffer.NONE),
                src_off=np.where(is_send, send_chunk, -1),
                dst_buf=np.where(is_send, Buffer.NONE, Buffer.INPUT),
                dst_off=np.where(is_send, -1, recv_chunk),
                op=op,
                tb=0,
                chan=0,
            )
        )
    alg = Algorithm(
        AlgorithmMeta(Collective.ALLREDUCE, n, n, n, inplace=True, name="ring", producer="bench"), tuple(graphs)
    )
    return alg.bind(size) if size is not None else alg


def _held_bytes(alg: Algorithm) -> int:
    """Bytes of the graphs' arrays, each array counted once (ranks share equal read-only columns)."""
    arrays = {}
    for g in alg.graphs:
        for name in (
            "ids",
            "kind",
            "peer",
            "tag",
            "count",
            "src_buf",
            "src_off",
            "dst_buf",
            "dst_off",
            "op",
            "size",
            "duration",
            "tb",
            "chan",
            "dep_ptr",
            "dep_pos",
        ):
            arr = getattr(g, name)
            arrays[id(arr)] = arr.nbytes
    return sum(arrays.values())


def _timed(fn):
    """Run ``fn`` once; return (result, wall seconds, CPU seconds)."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def _mlc_rates(alg: Algorithm, ranks: list[int], workdir: Path) -> dict[str, float] | None:
    """MLCommons' Python path: build et_def_pb2 Nodes, encodeMessage each; decodeMessage back."""
    try:
        from chakra.schema.protobuf.et_def_pb2 import GlobalMetadata, Node
        from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage, openFileRd
    except ImportError:
        return None
    nodes = sum(len(alg.graphs[r]) for r in ranks)

    def write() -> None:
        for r in ranks:
            g = alg.graphs[r]
            with open(workdir / f"mlc.{r}.et", "wb") as fh:
                gm = GlobalMetadata(version="0.0.4")
                encodeMessage(fh, gm)
                ids, kind, peer, size, tag = (getattr(g, c).tolist() for c in ("ids", "kind", "peer", "size", "tag"))
                ptr, pos = g.dep_ptr.tolist(), g.dep_pos.tolist()
                for i in range(len(g)):
                    nd = Node(id=ids[i], type=kind[i], data_deps=[ids[d] for d in pos[ptr[i] : ptr[i + 1]]])
                    send = kind[i] == NodeType.SEND
                    for name, value in (
                        ("comm_src", r if send else peer[i]),
                        ("comm_dst", peer[i] if send else r),
                        ("comm_tag", tag[i]),
                    ):
                        a = nd.attr.add(name=name)
                        a.int32_val = value
                    a = nd.attr.add(name="comm_size")
                    a.int64_val = size[i]
                    encodeMessage(fh, nd)

    def read() -> int:
        count = 0
        for r in ranks:
            fh = openFileRd(str(workdir / f"mlc.{r}.et"))
            gm = GlobalMetadata()
            decodeMessage(fh, gm)
            while True:
                nd = Node()
                if not decodeMessage(fh, nd):
                    break
                count += 1
            fh.close()
        return count

    _, ww, wc = _timed(write)
    count, rw, rc = _timed(read)
    assert count == nodes
    return {
        "nodes": nodes,
        "write_wall": nodes / ww,
        "write_cpu": nodes / wc,
        "read_wall": nodes / rw,
        "read_cpu": nodes / rc,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024, help="ring size (default 1024: about 4.2M nodes)")
    ap.add_argument("--mlc-ranks", type=int, default=8, help="ranks measured with mlc-chakra (a subset; it is slow)")
    ap.add_argument("--dir", type=Path, default=None, help="where to write the files (default: a temp dir)")
    args = ap.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="bench_chakra_", dir=args.dir))
    try:
        alg, bw, _bc = _timed(lambda: ring_allreduce(args.ranks))
        nodes = alg.node_count()
        paths, ww, wc = _timed(lambda: write_algorithm(alg, workdir / "ring"))
        on_disk = sum(p.stat().st_size for p in paths)
        back, rw, rc = _timed(lambda: read_algorithm(workdir / "ring"))
        assert back.node_count() == nodes and back.content_hash() == alg.content_hash()
        model_bytes = back.nbytes()
        held_bytes = _held_bytes(back)
        mlc = _mlc_rates(alg, list(range(min(args.mlc_ranks, args.ranks))), workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"Chakra ET I/O: pipelined ring all-reduce, {args.ranks} ranks, {nodes:,} nodes "
        f"(built in {bw:.2f} s), {os.cpu_count()} CPUs"
    )
    print(f"{'measure':<34}{'wall':>14}{'CPU':>14}")
    print(f"{'collhub write (nodes/s)':<34}{nodes / ww:>14,.0f}{nodes / wc:>14,.0f}")
    print(f"{'collhub read into model (nodes/s)':<34}{nodes / rw:>14,.0f}{nodes / rc:>14,.0f}")
    if mlc:
        print(
            f"{'mlc-chakra write (nodes/s)':<34}{mlc['write_wall']:>14,.0f}{mlc['write_cpu']:>14,.0f}"
            f"   ({mlc['nodes']:,} nodes)"
        )
        print(
            f"{'mlc-chakra read (nodes/s)':<34}{mlc['read_wall']:>14,.0f}{mlc['read_cpu']:>14,.0f}"
            f"   (protobuf objects only)"
        )
        print(
            f"{'ratio write collhub/mlc':<34}{nodes / ww / mlc['write_wall']:>13.1f}x"
            f"{nodes / wc / mlc['write_cpu']:>13.1f}x"
        )
        print(
            f"{'ratio read collhub/mlc':<34}{nodes / rw / mlc['read_wall']:>13.1f}x"
            f"{nodes / rc / mlc['read_cpu']:>13.1f}x"
        )
    else:
        print("mlc-chakra not installed: no comparison")
    print(f"{'file bytes per node':<34}{on_disk / nodes:>14.1f}")
    print(f"{'model RAM bytes per node':<34}{model_bytes / nodes:>14.1f}")
    print(f"{'  held after read (shared once)':<34}{held_bytes / nodes:>14.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
