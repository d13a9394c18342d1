"""A corpus of hostile Chakra ET inputs and output targets, generated into a temporary directory.

Each :class:`Case` builds its files from a good, bound 4-rank ring all-reduce written by collhub
and then damages exactly one thing (a GlobalMetadata attribute, one node attribute, a file's
kind, a gzip stream, an output target). ``argv`` is the ``collhub`` command line to run on it;
the expectations are the documented exit code and the words the one ``error:`` line must hold
(file, rank, node, attribute). Categories follow issue #11: ``resources`` (item 1), ``values``
(item 2), ``outputs`` (item 3) and ``cli`` (item 7).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.algorithms import ring
from hub.chakra import TypedValue, write_algorithm
from hub.chakra._decode import decode_global_metadata, decode_node
from hub.chakra._wire import delimit, encode_global_metadata, encode_node, frame

__all__ = ["CASES", "Case", "good_set", "rewrite"]

RANKS = 4
SIZE = 1 << 20


@dataclass(frozen=True)
class Case:
    name: str
    category: str
    #: builds the inputs under the directory given and returns the collhub arguments
    make: Callable[[Path], list[str]]
    code: int
    needles: tuple[str, ...]
    #: environment for the command (limits lowered so that a case stays small)
    env: dict[str, str] = field(default_factory=dict)
    #: post-condition on the directory after the command (outputs whole or absent)
    after: Callable[[Path], None] | None = None


def good_set(d: Path, name: str = "t", ranks: int = RANKS) -> Path:
    write_algorithm(ring("allreduce", ranks).bind(SIZE), d / name)
    return d / name


def _path(prefix: Path, rank: int) -> Path:
    return Path(f"{prefix}.{rank}.et")


def rewrite(
    prefix: Path,
    rank: int,
    *,
    meta: Callable[[str, list[Any]], tuple[str, list[Any]]] | None = None,
    nodes: Callable[[list[dict[str, Any]]], None] | None = None,
    raw_meta: bytes | None = None,
) -> None:
    """Decode one rank file with the general codec, change it, and encode it again."""
    path = _path(prefix, rank)
    data = path.read_bytes()
    starts, ends = frame(data)
    version, attrs = decode_global_metadata(data, starts[0], ends[0])
    body = [decode_node(data, s, e) for s, e in zip(starts[1:], ends[1:], strict=False)]
    if meta is not None:
        version, attrs = meta(version, attrs)
    if nodes is not None:
        nodes(body)
    head = raw_meta if raw_meta is not None else delimit(encode_global_metadata(version, attrs))
    path.write_bytes(head + b"".join(delimit(encode_node(**nd)) for nd in body))


def _set(attrs: list[Any], name: str, value: TypedValue | None) -> list[Any]:
    out = [(k, v) for k, v in attrs if k != name]
    return out + [(name, value)] if value is not None else out


def set_meta(
    name: str, value: TypedValue | None, ranks: tuple[int, ...] = tuple(range(RANKS))
) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        p = good_set(d)
        for r in ranks:
            rewrite(p, r, meta=lambda v, a: (v, _set(a, name, value)))
        return ["trace", "verify", str(p)]

    return make


def set_node(
    rank: int, index: int, name: str, value: TypedValue, command: str = "verify"
) -> Callable[[Path], list[str]]:
    def change(body: list[dict[str, Any]]) -> None:
        body[index]["attrs"] = _set(body[index]["attrs"], name, value)

    def make(d: Path) -> list[str]:
        p = good_set(d)
        rewrite(p, rank, nodes=change)
        return ["trace", command, str(p)]

    return make


def i32(v: int) -> TypedValue:
    return TypedValue("int32_val", v)


def i64(v: int) -> TypedValue:
    return TypedValue("int64_val", v)


# -- resources (item 1) ----------------------------------------------------------------------------
def _fifo(rank: int) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        p = good_set(d)
        _path(p, rank).unlink()
        os.mkfifo(_path(p, rank))
        return ["trace", "show", str(p)]

    return make


def _link(rank: int, target: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        p = good_set(d)
        _path(p, rank).unlink()
        os.symlink(target, _path(p, rank))
        return ["trace", "show", str(p)]

    return make


def _dir_rank(d: Path) -> list[str]:
    p = good_set(d)
    _path(p, 2).unlink()
    _path(p, 2).mkdir()
    return ["trace", "show", str(p)]


def _gzip_bomb(d: Path) -> list[str]:
    p = good_set(d)
    raw = _path(p, 1).read_bytes()
    # a valid rank file followed by 64 MiB of zero bytes, compressed to ~64 KiB: the limit is
    # lowered to 1 MiB for the case (the default is 1 GiB)
    with gzip.open(_path(p, 1), "wb", compresslevel=1) as fh:
        fh.write(raw)
        zeros = bytes(1 << 20)
        for _ in range(64):
            fh.write(zeros)
    return ["trace", "show", str(p)]


def _gzip_truncated(d: Path) -> list[str]:
    p = good_set(d)
    data = gzip.compress(_path(p, 3).read_bytes())
    _path(p, 3).write_bytes(data[: len(data) // 2])
    return ["trace", "show", str(p)]


def _gzip_trailing(d: Path) -> list[str]:
    p = good_set(d)
    _path(p, 0).write_bytes(gzip.compress(_path(p, 0).read_bytes()) + b"garbage")
    return ["trace", "show", str(p)]


def _gzip_bad_deflate(d: Path) -> list[str]:
    p = good_set(d)
    data = bytearray(gzip.compress(_path(p, 2).read_bytes()))
    data[12:20] = b"\xff" * 8
    _path(p, 2).write_bytes(bytes(data))
    return ["trace", "show", str(p)]


def _sparse(d: Path) -> list[str]:
    p = good_set(d)
    os.truncate(_path(p, 1), 8 << 30)  # 8 GiB that take no disk space: more than the memory limit
    return ["trace", "show", str(p)]


def _zeros(d: Path) -> list[str]:
    p = good_set(d)
    with open(_path(p, 2), "ab") as fh:
        fh.write(bytes(16 << 20))  # 16 MiB of zero bytes after the real nodes
    return ["trace", "show", str(p)]


def _produce(ranks: str, extra: tuple[str, ...] = ()) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        return [
            "produce",
            "hub.ring",
            "--set",
            "collective=allreduce",
            "--set",
            f"ranks={ranks}",
            *extra,
            "--out",
            str(d / "big"),
        ]

    return make


RESOURCES = [
    Case(
        "ranks 2^31-1 on rank 0",
        "resources",
        set_meta("ranks", i32((1 << 31) - 1), (0,)),
        3,
        ("t.4.et", "rank 4", "2147483647 ranks"),
    ),
    Case("ranks 2^31-1 on every rank", "resources", set_meta("ranks", i32((1 << 31) - 1)), 3, ("t.4.et", "ranks")),
    Case("ranks 2^62 (int64)", "resources", set_meta("ranks", i64(1 << 62), (0,)), 3, ("t.4.et", "ranks")),
    Case("ranks 0", "resources", set_meta("ranks", i32(0), (0,)), 3, ("t.0.et", "rank 0", "ranks = 0")),
    Case("ranks -1", "resources", set_meta("ranks", i32(-1), (0,)), 3, ("t.0.et", "ranks = -1")),
    Case(
        "ranks as a double",
        "resources",
        set_meta("ranks", TypedValue("double_val", 4.0), (0,)),
        3,
        ("t.0.et", "ranks", "double_val"),
    ),
    Case(
        "scratch_chunks 2^31-1",
        "resources",
        set_meta("scratch_chunks", i32((1 << 31) - 1)),
        3,
        ("t.0.et", "scratch_chunks", "limit"),
    ),
    Case("in_chunks 2^31-1", "resources", set_meta("in_chunks", i32((1 << 31) - 1)), 3, ("t.0.et", "in_chunks")),
    Case(
        "out_chunks 2^40 (int64)",
        "resources",
        set_meta("out_chunks", i64(1 << 40)),
        3,
        ("t.0.et", "out_chunks", "out of range"),
    ),
    Case(
        "gzip bomb",
        "resources",
        _gzip_bomb,
        3,
        ("t.1.et", "rank 1", "inflates past the limit"),
        env={"COLLHUB_MAX_INFLATED_BYTES": str(1 << 20)},
    ),
    Case("gzip cut off", "resources", _gzip_truncated, 3, ("t.3.et", "rank 3", "gzip")),
    Case("gzip trailing bytes", "resources", _gzip_trailing, 3, ("t.0.et", "rank 0", "gzip")),
    Case("gzip bad deflate data", "resources", _gzip_bad_deflate, 3, ("t.2.et", "rank 2", "gzip")),
    Case("fifo rank file", "resources", _fifo(1), 3, ("t.1.et", "rank 1", "fifo")),
    Case("fifo rank 0", "resources", _fifo(0), 3, ("t.0.et", "rank 0", "fifo")),
    Case("/dev/zero rank file", "resources", _link(3, "/dev/zero"), 3, ("t.3.et", "rank 3", "character device")),
    Case("link to a missing file", "resources", _link(2, "/nonexistent/x.et"), 3, ("t.2.et", "rank 2", "not found")),
    Case("directory rank file", "resources", _dir_rank, 3, ("t.2.et", "rank 2", "directory")),
    Case("sparse 8 GiB rank file", "resources", _sparse, 3, ("t.0.et", "do not fit in memory")),
    Case("16 MiB of zero bytes", "resources", _zeros, 3, ("t.2.et", "rank 2", "empty message")),
    Case("produce ranks=10**9", "resources", _produce("1000000000"), 2, ("max_ranks",)),
    Case("produce ranks=2**31", "resources", _produce(str(1 << 31)), 2, ("max_ranks",)),
    Case(
        "produce ranks above a lowered max_ranks",
        "resources",
        _produce("64", ("--set", "max_ranks=32")),
        2,
        ("max_ranks=32",),
    ),
]


# -- values (item 2) ----------------------------------------------------------------------------
def _eight_files_four_declared(d: Path) -> list[str]:
    good_set(d, ranks=8)
    p = good_set(d / "four")
    for r in range(4, 8):
        (d / "four").joinpath(f"t.{r}.et").write_bytes((d / f"t.{r}.et").read_bytes())
    return ["trace", "convert", str(p), str(d / "out.json")]


def _zero_length_meta(rank: int) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        p = good_set(d)
        rewrite(p, rank, raw_meta=b"\x00")
        return ["trace", "verify", str(p)]

    return make


def _corrupt_meta(d: Path) -> list[str]:
    p = good_set(d)
    rewrite(p, 2, meta=lambda v, a: (v, _set(a, "collective", TypedValue("string_val", "allgather"))))
    return ["trace", "verify", str(p)]


def _single_file_no_profile(d: Path) -> list[str]:
    # one rank file whose GlobalMetadata lost the profile: nothing to compare with, but its
    # nodes carry the profile's buffer attributes
    p = good_set(d, ranks=2)
    rewrite(p, 0, raw_meta=b"\x00")
    rewrite(p, 1, raw_meta=b"\x00")
    return ["trace", "verify", str(p)]


def _absurd_sizes(size: int, command: str = "show") -> Callable[[Path], list[str]]:
    """Every SEND/RECV of an unbound set carries comm_size ``size``."""

    def make(d: Path) -> list[str]:
        p = good_set(d)

        def big(body: list[dict[str, Any]]) -> None:
            for nd in body:
                if nd["type"] in (5, 6):
                    nd["attrs"] = _set(nd["attrs"], "comm_size", i64(size))

        for r in range(RANKS):
            rewrite(p, r, meta=lambda v, a: (v, _set(a, "size", None)), nodes=big)
        if command == "simulate":
            return ["consume", "hub.simulate", str(p), "--set", "network=ring:4", "--workdir", str(d / "w")]
        return ["trace", command, str(p)]

    return make


def _consume(make_files: Callable[[Path], list[str]], network: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        prefix = make_files(d)[-1]
        return ["consume", "hub.simulate", prefix, "--set", f"network={network}", "--workdir", str(d / "w")]

    return make


def _workload(change: Callable[[Any], None], command: str = "simulate") -> Callable[[Path], list[str]]:
    """A 4-rank all-reduce workload (one COMM_COLL node per rank, then a SEND/RECV pair), changed."""

    def make(d: Path) -> list[str]:
        from hub.chakra import Collective, NodeType, Workload, WorkloadNode, write_workload

        wl = Workload.single_collective(Collective.ALLREDUCE, RANKS, SIZE)
        for r, nodes in enumerate(wl.ranks):
            peer = (r + 1) % RANKS
            nodes.append(
                WorkloadNode(
                    id=1, name="s", type=NodeType.SEND, deps=[0], comm_size=64, comm_src=r, comm_dst=peer, comm_tag=0
                )
            )
            nodes.append(
                WorkloadNode(
                    id=2,
                    name="r",
                    type=NodeType.RECV,
                    deps=[0],
                    comm_size=64,
                    comm_src=(r - 1) % RANKS,
                    comm_dst=r,
                    comm_tag=0,
                )
            )
        change(wl)
        write_workload(wl, d / "w")
        if command == "simulate":
            return ["consume", "hub.simulate", str(d / "w"), "--set", "network=ring:4", "--workdir", str(d)]
        return ["trace", command, str(d / "w")]

    return make


def _wl_node(rank: int, index: int, **values: Any) -> Callable[[Any], None]:
    def change(wl: Any) -> None:
        for k, v in values.items():
            setattr(wl.ranks[rank][index], k, v)

    return change


WORKLOADS = [
    Case(
        "workload: collective of 2^62 bytes",
        "values",
        _workload(_wl_node(0, 0, comm_size=1 << 62)),
        3,
        ("w.0.et", "rank 0", "node 0", "comm_size = 4611686018427387904 is out of range"),
    ),
    Case(
        "workload: collective of 2^41 bytes",
        "values",
        _workload(_wl_node(1, 0, comm_size=1 << 41)),
        3,
        ("w.1.et", "rank 1", "node 0", "comm_size = 2199023255552 is out of range"),
    ),
    Case(
        "workload: SEND of 2^45 bytes (show)",
        "values",
        _workload(_wl_node(2, 1, comm_size=1 << 45), "show"),
        3,
        ("w.2.et", "rank 2", "node 1", "out of range"),
    ),
    Case(
        "workload: negative comm_size",
        "values",
        _workload(_wl_node(2, 0, comm_size=-8), "show"),
        3,
        ("w.2.et", "rank 2", "node 0", "comm_size = -8"),
    ),
    Case(
        "workload: comm_dst 77",
        "values",
        _workload(_wl_node(1, 1, comm_dst=77), "show"),
        3,
        ("w.1.et", "rank 1", "node 1", "comm_dst = 77"),
    ),
    Case(
        "workload: comm_src -1",
        "values",
        _workload(_wl_node(3, 2, comm_src=-1), "show"),
        3,
        ("w.3.et", "rank 3", "node 2", "comm_src = -1"),
    ),
]


# node 0 of each rank is a SEND, node 1 its RECV (ring: S0 R0 C0 S1 ...)
VALUES = [
    Case(
        "comm_size 0 on a bound set",
        "values",
        set_node(1, 0, "comm_size", i64(0)),
        3,
        ("t.1.et", "rank 1", "node 0", "comm_size = 0"),
    ),
    Case(
        "comm_size 0 (simulate)",
        "values",
        _consume(set_node(1, 1, "comm_size", i64(0)), "network=ring:4"),
        3,
        ("t.1.et", "rank 1", "node 1", "comm_size = 0"),
    ),
    Case(
        "negative comm_size",
        "values",
        set_node(2, 0, "comm_size", i64(-5)),
        3,
        ("t.2.et", "rank 2", "node 0", "comm_size = -5"),
    ),
    Case(
        "comm_size 2^64-1 (uint64)",
        "values",
        set_node(0, 1, "comm_size", TypedValue("uint64_val", (1 << 64) - 1)),
        3,
        ("t.0.et", "rank 0", "node 1", "comm_size"),
    ),
    # a message larger than any accelerator's memory (1 TiB) is impossible input: refused where
    # it is read, not summed into int64 overflows or simulated into hours (issue 26)
    Case("comm_size 2^62 on every node", "values", _absurd_sizes(1 << 62), 3, ("t.0.et", "rank 0", "out of range")),
    Case(
        "comm_size 2^50 on every node (simulate)",
        "values",
        _absurd_sizes(1 << 50, "simulate"),
        3,
        ("t.0.et", "comm_size = 1125899906842624", "out of range"),
    ),
    Case(
        "comm_size 1 TiB + 1 (verify)",
        "values",
        _absurd_sizes((1 << 40) + 1, "verify"),
        3,
        ("comm_size = 1099511627777", "out of range"),
    ),
    Case("size 2^41 (GlobalMetadata)", "values", set_meta("size", i64(1 << 41)), 3, ("size = 2199023255552",)),
    Case(
        "message larger than the declared size",
        "values",
        set_node(3, 0, "comm_size", i64(SIZE * 10)),
        3,
        ("t.3.et", "rank 3", "node 0", "comm_size", "larger than the declared size"),
    ),
    Case("negative in_chunks", "values", set_meta("in_chunks", i32(-1)), 3, ("t.0.et", "in_chunks = -1")),
    Case(
        "negative scratch_chunks", "values", set_meta("scratch_chunks", i32(-4)), 3, ("t.0.et", "scratch_chunks = -4")
    ),
    Case("negative size", "values", set_meta("size", i64(-1)), 3, ("t.0.et", "size = -1")),
    Case(
        "size past int64 (uint64)",
        "values",
        set_meta("size", TypedValue("uint64_val", (1 << 64) - 1)),
        3,
        ("t.0.et", "size"),
    ),
    Case(
        "size as a double",
        "values",
        set_meta("size", TypedValue("double_val", 1.5)),
        3,
        ("t.0.et", "size", "double_val"),
    ),
    Case(
        "in_chunks as a float",
        "values",
        set_meta("in_chunks", TypedValue("float_val", 4.0)),
        3,
        ("t.0.et", "in_chunks", "float_val"),
    ),
    Case(
        "inplace as a string", "values", set_meta("inplace", TypedValue("string_val", "yes")), 3, ("t.0.et", "inplace")
    ),
    Case("collective as an int", "values", set_meta("collective", i32(3)), 3, ("t.0.et", "collective")),
    Case(
        "comm_size as a double",
        "values",
        set_node(1, 0, "comm_size", TypedValue("double_val", 1.5)),
        3,
        ("t.1.et", "rank 1", "node 0", "comm_size"),
    ),
    Case(
        "cnt as a double",
        "values",
        set_node(1, 1, "cnt", TypedValue("double_val", 1.0)),
        3,
        ("t.1.et", "rank 1", "node 1", "cnt"),
    ),
    Case("op 7", "values", set_node(2, 1, "op", i32(7)), 3, ("t.2.et", "rank 2", "node 1", "op = 7")),
    Case("op -1", "values", set_node(2, 1, "op", i32(-1)), 3, ("t.2.et", "rank 2", "node 1", "op = -1")),
    Case("tb -5", "values", set_node(0, 0, "tb", i32(-5)), 3, ("t.0.et", "rank 0", "node 0", "tb = -5")),
    Case("chan -1", "values", set_node(0, 1, "chan", i32(-1)), 3, ("t.0.et", "rank 0", "node 1", "chan = -1")),
    Case("sbuf 5", "values", set_node(3, 0, "sbuf", i32(5)), 3, ("t.3.et", "rank 3", "node 0", "sbuf = 5")),
    Case("doff -7", "values", set_node(3, 1, "doff", i32(-7)), 3, ("t.3.et", "rank 3", "node 1", "doff = -7")),
    Case(
        "cnt 2^32+1 (int64, would wrap)",
        "values",
        set_node(1, 0, "cnt", i64((1 << 32) + 1)),
        3,
        ("t.1.et", "rank 1", "node 0", "cnt = 4294967297"),
    ),
    Case("cnt negative", "values", set_node(1, 0, "cnt", i32(-2)), 3, ("t.1.et", "rank 1", "node 0", "cnt = -2")),
    Case(
        "comm_dst 99", "values", set_node(2, 0, "comm_dst", i32(99)), 3, ("t.2.et", "rank 2", "node 0", "comm_dst = 99")
    ),
    Case(
        "comm_src -3", "values", set_node(2, 1, "comm_src", i32(-3)), 3, ("t.2.et", "rank 2", "node 1", "comm_src = -3")
    ),
    Case("root 9 of 4 ranks", "values", set_meta("root", i32(9)), 3, ("t.0.et", "root = 9")),
    Case("root -1", "values", set_meta("root", i32(-1)), 3, ("t.0.et", "root = -1")),
    Case(
        "4 ranks declared, 8 files present",
        "values",
        _eight_files_four_declared,
        3,
        ("t.0.et", "ranks = 4", "rank file 7"),
    ),
    Case("zero-length GlobalMetadata on rank 0", "values", _zero_length_meta(0), 3, ("t.0.et", "collhub_profile")),
    Case("zero-length GlobalMetadata on rank 2", "values", _zero_length_meta(2), 3, ("t.2.et", "rank 2")),
    Case("GlobalMetadata of another set on rank 2", "values", _corrupt_meta, 3, ("t.2.et", "rank 2", "collective")),
    Case("profile lost on every rank", "values", _single_file_no_profile, 3, ("t.0.et", "rank 0", "collhub_profile")),
]


# -- outputs (item 3) and cli (item 7) ---------------------------------------------------------
def _no_files_here(d: Path) -> None:
    assert not [p for p in d.iterdir() if p.name.endswith(".et")], sorted(p.name for p in d.iterdir())


def _empty_out(d: Path) -> list[str]:
    return ["produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4", "--out", ""]


def _dir_out(d: Path) -> list[str]:
    return ["produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4", "--out", str(d) + "/"]


def _force_onto_file(d: Path) -> list[str]:
    (d / "p.yaml").write_text(
        "version: 1\nname: p\nsources:\n  ring:\n    producer: hub.ring\n"
        "    params: {collective: allreduce, ranks: 4}\n"
    )
    (d / "mine.txt").write_text("precious\n")
    return ["run", str(d / "p.yaml"), "--out", str(d / "mine.txt"), "--force"]


def _precious_kept(d: Path) -> None:
    assert (d / "mine.txt").read_text() == "precious\n"
    assert sorted(p.name for p in d.iterdir()) == ["mine.txt", "p.yaml"], sorted(p.name for p in d.iterdir())


def _convert_onto_dir(d: Path) -> list[str]:
    p = good_set(d)
    (d / "out.json").mkdir()
    return ["trace", "convert", str(p), str(d / "out.json")]


def _et_over_directory(d: Path) -> list[str]:
    (d / "x.2.et").mkdir()  # a directory where rank file 2 would go
    return ["produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4", "--out", str(d / "x")]


def _nothing_but_dir(d: Path) -> None:
    assert sorted(p.name for p in d.iterdir()) == ["x.2.et"], sorted(p.name for p in d.iterdir())


def _missing_json(d: Path) -> list[str]:
    return ["trace", "convert", str(d / "nope.json"), str(d / "out")]


def _missing_prefix(d: Path) -> list[str]:
    return ["trace", "convert", str(d / "nope"), str(d / "out.json")]


def _fifo_json(d: Path) -> list[str]:
    os.mkfifo(d / "in.json")
    return ["trace", "convert", str(d / "in.json"), str(d / "out")]


def _json_case(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], list[str]]:
    """The JSON view of the good set, changed, converted back to ET files."""

    def make(d: Path) -> list[str]:
        import json

        from hub.chakra import algorithm_to_json, read_algorithm

        doc = algorithm_to_json(read_algorithm(good_set(d / "src")))
        change(doc)
        (d / "in.json").write_text(json.dumps(doc))
        import shutil

        shutil.rmtree(d / "src")
        return ["trace", "convert", str(d / "in.json"), str(d / "out")]

    return make


def _json_col(rank: int, column: str, pos: int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["graphs"][rank]["columns"][column][pos] = value

    return change


def _json_meta(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["meta"][key] = value

    return change


def _json_bad_dep(doc: dict[str, Any]) -> None:
    doc["graphs"][1]["dep_pos"][0] = 10_000


JSON = [
    Case(
        "JSON: float chunk count",
        "values",
        _json_case(_json_col(1, "count", 0, 1.5)),
        3,
        ("in.json", "graphs[1].count"),
    ),
    Case(
        "JSON: count past int32",
        "values",
        _json_case(_json_col(1, "count", 0, 1 << 40)),
        3,
        ("in.json", "graphs[1].count"),
    ),
    Case(
        "JSON: comm_size 0 in a bound set",
        "values",
        _json_case(_json_col(2, "size", 0, 0)),
        3,
        ("in.json", "rank 2", "node 0", "comm_size = 0"),
    ),
    Case("JSON: ranks 2^31-1", "resources", _json_case(_json_meta("ranks", (1 << 31) - 1)), 3, ("in.json", "ranks")),
    Case("JSON: size 1.5", "values", _json_case(_json_meta("size", 1.5)), 3, ("in.json", "meta.size")),
    Case("JSON: dependency on no node", "values", _json_case(_json_bad_dep), 3, ("in.json", "graphs[1].dep_pos")),
]


def _smaller_set_over_larger(d: Path) -> list[str]:
    good_set(d, "r", ranks=8)
    return ["produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4", "--out", str(d / "r")]


def _only_four(d: Path) -> None:
    assert sorted(p.name for p in d.iterdir()) == [f"r.{r}.et" for r in range(4)], sorted(d.iterdir())


def _modes(expected: dict[str, int]) -> Callable[[Path], None]:
    def after(d: Path) -> None:
        got = {str(p.relative_to(d)): p.stat().st_mode & 0o777 for p in d.rglob("*")}
        for name, mode in expected.items():
            assert got.get(name) == mode, (name, oct(got.get(name, 0)), sorted(got))
        for name, mode in got.items():
            assert mode in (0o644, 0o755), (name, oct(mode))

    return after


def _simulate_artifacts(d: Path) -> list[str]:
    p = good_set(d)
    return [
        "consume",
        "hub.simulate",
        str(p),
        "--set",
        "network=ring:4",
        "--set",
        "trace=true",
        "--set",
        "plot=true",
        "--workdir",
        str(d / "w"),
    ]


def _export_xml(d: Path) -> list[str]:
    p = good_set(d)
    return ["consume", "mscclang.export", str(p), "--set", "out=x.xml", "--workdir", str(d / "w")]


def _bundle(d: Path) -> list[str]:
    p = good_set(d)
    return [
        "consume",
        "astrasim.bundle",
        str(p),
        "--set",
        "out=b",
        "--set",
        "network=ring:4",
        "--workdir",
        str(d / "w"),
    ]


def _json_view(d: Path) -> list[str]:
    p = good_set(d)
    return ["trace", "convert", str(p), str(d / "v.json")]


OUTPUTS = [
    Case("a 4-rank set over an 8-rank set", "outputs", _smaller_set_over_larger, 0, (), after=_only_four),
    Case(
        "modes: simulate trace and plot",
        "outputs",
        _simulate_artifacts,
        0,
        (),
        after=_modes({"w/ring.aware.trace.json": 0o644, "w/ring.aware.png": 0o644}),  # mode auto: aware on a ring
    ),
    Case("modes: MSCCL-IR export", "outputs", _export_xml, 0, (), after=_modes({"w/x.xml": 0o644})),
    Case(
        "modes: ASTRA-sim bundle",
        "outputs",
        _bundle,
        0,
        (),
        after=_modes({"w/b": 0o755, "w/b/algorithm": 0o755, "w/b/system.json": 0o644}),
    ),
    Case("modes: JSON view", "outputs", _json_view, 0, (), after=_modes({"v.json": 0o644})),
    Case("--out empty", "outputs", _empty_out, 2, ("names no file",), after=_no_files_here),
    Case("--out a directory path", "outputs", _dir_out, 2, ("names no file",), after=_no_files_here),
    Case(
        "run --force onto a regular file",
        "outputs",
        _force_onto_file,
        2,
        ("mine.txt", "not a directory"),
        after=_precious_kept,
    ),
    Case("convert onto a directory", "outputs", _convert_onto_dir, 2, ("out.json", "directory")),
    Case(
        "rank file target is a directory",
        "outputs",
        _et_over_directory,
        2,
        ("x.2.et", "directory"),
        after=_nothing_but_dir,
    ),
]
CLI = [
    Case("convert: missing JSON input", "cli", _missing_json, 3, ("nope.json",)),
    Case("convert: missing ET prefix", "cli", _missing_prefix, 3, ("nope.0.et", "rank 0", "not found")),
    Case("convert: fifo JSON input", "cli", _fifo_json, 3, ("in.json", "regular file")),
]

CASES: list[Case] = [*RESOURCES, *VALUES, *WORKLOADS, *JSON, *OUTPUTS, *CLI]
