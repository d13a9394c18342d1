"""The workload rows of the scale benchmark (issue #32): real PyTorch traces read and written
against MLCommons' own ``mlc-chakra`` loops, and a >= 1M-node trace built from them, end to end.

    python benchmarks/bench_scale.py          # the whole scale table, these rows included
    python benchmarks/scale_workload.py       # these rows alone

Inputs: ``../shared/data/chakra-pytorch/dlrm8`` (8 ranks of a real DLRM step, 15,496 nodes, made
by ``mlc-chakra``'s converter). The big trace repeats those ranks' nodes over 64 ranks
(rank r is dlrm8's rank r % 8) for ``REPS`` iterations: iteration i's ids are offset by
i * (largest id + 1), and its dependencies on the converter's deleted root (node 0, absent)
point at the previous iteration's last node instead, so the iterations form one chain.

Rows (ratio > 1 = faster than the reference, measured in the same run):

* read dlrm8 / the big trace in this process (``hub.chakra.read_workload``; best of 3 on dlrm8,
  once on the big one) against ``mlc-chakra``'s ``decodeMessage`` loop over the same files
  (upb protobuf); target ratio >= 5. The read is lazy: every node is checked (a read that
  succeeds never fails later) and no node object is made; the row below it
  (``+ every node object made``, ``lazy=False``) is the read of a caller that uses every node;
* write the big trace (``write_workload`` of the nodes built in memory; the building is not
  timed) against ``encodeMessage`` of the same nodes, parsed by ``mlc-chakra`` beforehand (only
  the encode loop is timed); target ratio >= 5;
* ``collhub trace show`` / ``trace inline`` / ``trace inline --overlap 4`` / ``consume
  hub.simulate`` of the big trace as whole processes; target <= 10 s and <= 2 GiB each.

The machine may be shared: CPU seconds are the steadier figure; wall seconds are printed too.
"""

from __future__ import annotations

import glob
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _rusage import measure  # noqa: E402  (needs the path above)
from scale_sim import Row, _collhub  # noqa: E402

DLRM = ROOT.parent / "shared" / "data" / "chakra-pytorch" / "dlrm8" / "dlrm"
RANKS = 64
REPS = 9  # 64 ranks x ~1,937 nodes x 9 = 1.1M nodes
TARGET_RATIO = 5.0
TARGET_S = 10.0
TARGET_MIB = 2048.0
CAP_BYTES = 6 << 30  # address space per command (see rows_commands)


def build_big(out: Path, ranks: int = RANKS, reps: int = REPS) -> tuple[int, float, float]:
    """Write the big trace (module docs) at ``out``: (node count, wall s, CPU s of the write)."""
    from hub.chakra import Workload, WorkloadNode, read_workload, write_workload

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dlrm8's dangling root dependencies
        src = read_workload(DLRM)
    span = 1 + max(n.id for r in src.ranks for n in r)
    rank_nodes = []
    for r in range(ranks):
        base = src.ranks[r % len(src.ranks)]
        present = {n.id for n in base}
        last = base[-1].id
        nodes: list[WorkloadNode] = []
        for i in range(reps):
            off = i * span
            # a dependency on an absent node (the deleted root) points at the previous iteration's end
            shifted = {d: d + off for d in present}
            outside = last + off - span if i else None

            def shift(d: int, shifted: dict[int, int] = shifted, outside: int | None = outside) -> int:
                return shifted.get(d, d if outside is None else outside)

            for n in base:
                nodes.append(
                    WorkloadNode(
                        id=n.id + off,
                        name=n.name,
                        type=n.type,
                        deps=[shift(d) for d in n.deps],
                        duration_micros=n.duration_micros,
                        comm_type=n.comm_type,
                        comm_size=n.comm_size,
                        is_cpu_op=n.is_cpu_op,
                        attrs=dict(n.attrs),
                        ctrl_deps=[shift(d) for d in n.ctrl_deps],
                        inputs=n.inputs,
                        outputs=n.outputs,
                    )
                )
        rank_nodes.append(nodes)
    wl = Workload(ranks=rank_nodes, version=src.version, name="dlrm8x64")
    w0, c0 = time.perf_counter(), time.process_time()
    write_workload(wl, out)
    return wl.node_count(), time.perf_counter() - w0, time.process_time() - c0


def _mlc_read(prefix: Path) -> tuple[int, float, float]:
    """mlc-chakra's decode loop over a file set: (nodes, wall s, CPU s)."""
    from chakra.schema.protobuf.et_def_pb2 import GlobalMetadata, Node
    from chakra.src.third_party.utils.protolib import decodeMessage, openFileRd

    files = sorted(glob.glob(f"{prefix}.*.et"))
    w0, c0 = time.perf_counter(), time.process_time()
    count = 0
    for f in files:
        fh = openFileRd(f)
        decodeMessage(fh, GlobalMetadata())
        while True:
            nd = Node()
            if not decodeMessage(fh, nd):
                break
            count += 1
        fh.close()
    return count, time.perf_counter() - w0, time.process_time() - c0


def _mlc_write(prefix: Path, out: Path) -> tuple[int, float, float]:
    """mlc-chakra's encoder: the set parsed first (not timed), then encodeMessage of every node."""
    from chakra.schema.protobuf.et_def_pb2 import GlobalMetadata, Node
    from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage, openFileRd

    parsed = []
    for f in sorted(glob.glob(f"{prefix}.*.et")):
        fh = openFileRd(f)
        gm = GlobalMetadata()
        decodeMessage(fh, gm)
        nodes = []
        while True:
            nd = Node()
            if not decodeMessage(fh, nd):
                break
            nodes.append(nd)
        fh.close()
        parsed.append((gm, nodes))
    w0, c0 = time.perf_counter(), time.process_time()
    for r, (gm, nodes) in enumerate(parsed):
        with open(f"{out}.{r}.et", "wb") as fh:
            encodeMessage(fh, gm)
            for nd in nodes:
                encodeMessage(fh, nd)
    return sum(len(n) for _g, n in parsed), time.perf_counter() - w0, time.process_time() - c0


def _ours_read(prefix: Path, times: int, compiled: bool = True, lazy: bool = True) -> tuple[int, float, float]:
    """``read_workload`` (best of ``times``): lazy, every node checked and none made; with
    ``lazy=False``, the read and the making of every WorkloadNode object."""
    from hub.chakra import read_workload

    best = (0, float("inf"), float("inf"))
    for _ in range(times):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w0, c0 = time.perf_counter(), time.process_time()
            wl = read_workload(prefix, compiled=compiled, lazy=lazy)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if wall < best[1]:
            best = (wl.node_count(), wall, cpu)
        del wl
    return best


def _ratio_row(what: str, ours: tuple[int, float, float], ref: tuple[int, float, float], name: str) -> Row:
    nodes, wall, cpu = ours
    assert nodes == ref[0], (nodes, ref[0])
    ratio = ref[1] / wall
    import resource

    return Row(
        f"{what}: {nodes / wall / 1e6:.2f}M nodes/s",
        wall,
        cpu,
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # this process's peak so far
        f"{name} {ref[1]:.3f} s wall, {ref[2]:.3f} s CPU (same run; by CPU {ref[2] / cpu:.1f}x; target >= 5x)",
        ratio,
        ratio >= TARGET_RATIO,
    )


def _eager_row(ours: tuple[int, float, float], ref: tuple[int, float, float]) -> Row:
    """The read of a caller that uses every node (no target: the read row above it is the one)."""
    row = _ratio_row("  + every node object made", ours, ref, "same loop")
    row.reference, row.ok = row.reference.replace("; target >= 5x", ""), None
    return row


def rows_read_write(work: Path) -> list[Row]:
    """Read dlrm8 and the big trace, write the big trace: against mlc-chakra in this run."""
    try:
        import chakra.schema.protobuf.et_def_pb2  # noqa: F401
    except ImportError:
        return []
    if not DLRM.with_name("dlrm.0.et").exists():
        return []
    ours = _ours_read(DLRM, 3)
    mlc = _mlc_read(DLRM)
    rows = [_ratio_row("read dlrm8 (real, 8 ranks)", ours, mlc, "mlc-chakra decode loop")]
    _n, before_wall, before_cpu = _ours_read(DLRM, 1, compiled=False)
    gain = before_cpu / ours[2]
    rows[
        0
    ].note = f"general decoder alone (before): {before_wall:.2f} s wall, {before_cpu:.2f} s CPU ({gain:.0f}x by CPU)"
    rows.append(_eager_row(_ours_read(DLRM, 3, lazy=False), mlc))
    big = work / "big" / "wl"
    big.parent.mkdir()
    nodes, write_wall, write_cpu = build_big(big)
    mlc_big = _mlc_read(big)
    rows.append(
        _ratio_row(f"read {nodes / 1e6:.2f}M-node trace", _ours_read(big, 1), mlc_big, "mlc-chakra decode loop")
    )
    rows.append(_eager_row(_ours_read(big, 1, lazy=False), mlc_big))
    (work / "mlc").mkdir()
    mlc_w = _mlc_write(big, work / "mlc" / "wl")
    rows.append(
        _ratio_row(f"write {nodes / 1e6:.2f}M-node trace", (nodes, write_wall, write_cpu), mlc_w, "mlc-chakra encoder")
    )
    return rows


def rows_commands(work: Path) -> list[Row]:
    """trace show / inline / inline --overlap 4 / consume hub.simulate of the big trace."""
    big = work / "big" / "wl"
    if not big.with_name("wl.0.et").exists():
        return []
    cmds = {
        "trace show": ["trace", "show", str(big)],
        "trace inline (ring)": ["trace", "inline", str(big), str(work / "inl"), "-a", "allreduce=ring"],
        "trace inline --overlap 4": ["trace", "inline", str(big), str(work / "ovl"), "--overlap", "4"],
        "consume hub.simulate": ["consume", "hub.simulate", str(big), "-s", f"network=ring:{RANKS}"],
    }
    # each command under an address-space cap, so that one past the machine's memory fails with a
    # MemoryError (a row saying so) instead of calling the kernel's OOM killer on a shared machine
    cap = ["prlimit", f"--as={CAP_BYTES}"] if shutil.which("prlimit") else []
    rows = []
    for what, args in cmds.items():
        try:
            wall, cpu, mib, _out = measure([*cap, _collhub(), *args])
        except RuntimeError as exc:
            rows.append(Row(f"{what}, 1M-node trace", float("nan"), float("nan"), float("nan"), str(exc), 0.0, False))
            continue
        ok = wall <= TARGET_S and mib <= TARGET_MIB
        rows.append(Row(f"{what}, 1M-node trace", wall, cpu, mib, "target 10 s, 2 GiB", TARGET_S / wall, ok))
    return rows


def rows_workload(work: Path) -> list[Row]:
    """Every row above, in order (the command rows use the big trace the first rows write)."""
    return rows_read_write(work) + rows_commands(work)


ROWS: list[Callable[[Path], list[Row]]] = [rows_workload]


def main() -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for fn in ROWS:
            for r in fn(work):
                verdict = "" if r.ok is None else (" (target met)" if r.ok else " (target NOT met)")
                figures = f"{r.wall:>8.2f}{r.cpu:>8.2f}{r.mib:>8.0f}{r.ratio:>7.1f}x"
                print(f"{r.name:<44}{figures}  {r.reference}{verdict} {r.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
