"""Helpers for the collhub-astrasim tests: an independent ET decoder and a reference algorithm.

The decoder uses MLCommons' reference protobuf classes (``mlc-chakra``), independent of both the
plugin's encoder and collhub's reader, so wire-type checks cannot agree with us by construction.
(A uniquely named module, not conftest.py: several conftest modules share one name in a run.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, build_algorithm

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO.parent / "shared" / "data" / "astra-sim" / "custom-ring-allreduce-8npus-1MB"


def decode_et(path: Path) -> tuple[Any, list[Any]]:
    """(GlobalMetadata, [Node, ...]) of one .et file, decoded with MLCommons' et_def_pb2."""
    pb = pytest.importorskip("chakra.schema.protobuf.et_def_pb2")
    from google.protobuf.internal.decoder import _DecodeVarint32

    data = path.read_bytes()
    pos = 0
    msgs: list[Any] = []
    while pos < len(data):
        length, pos = _DecodeVarint32(data, pos)
        msg = pb.GlobalMetadata() if not msgs else pb.Node()
        msg.ParseFromString(data[pos : pos + length])
        pos += length
        msgs.append(msg)
    return msgs[0], msgs[1:]


def attrs_of(msg: Any) -> list[tuple[str, str, Any]]:
    """(name, oneof field, value) of every attribute, in file order."""
    out = []
    for a in msg.attr:
        field = a.WhichOneof("value")
        value = getattr(a, field)
        if field.endswith("_list"):
            value = list(value.values)
        out.append((a.name, field, value))
    return out


def msccl_ring_allreduce(n: int = 8, reduce_micros: int = 7) -> Algorithm:
    """MSCCLang's ``allreduce_a100_ring.py n 1 1`` without fusion, built by hand from the XML's
    step list (chakra-et.md §6.9): one chain per rank, ``s``, 7 x (``rrc``, ``s``), then ``r``/``s``
    alternating and a final ``r``. Rank r sends to r+1 and receives from r-1 on channel 0."""
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        nxt, prv = (r + 1) % n, (r - 1) % n
        last = b.send(nxt, src=(Buffer.INPUT, r), deps=())
        for k in range(1, n):  # reduce-scatter: receive-reduce chunk r-k, pass it on
            c = (r - k) % n
            rv = b.recv(prv, dst=(Buffer.INPUT, c), op=Op.REDUCE, deps=[last])
            cp = b.comp(Op.NONE, deps=[rv], duration_micros=reduce_micros)
            last = b.send(nxt, src=(Buffer.INPUT, c), deps=[cp])
        for k in range(n - 1):  # all-gather: receive the reduced chunk r-k, forward all but the last
            c = (r - k) % n
            last = b.recv(prv, dst=(Buffer.INPUT, c), op=Op.COPY, deps=[last])
            if k < n - 2:
                last = b.send(nxt, src=(Buffer.INPUT, c), deps=[last])
        builders.append(b)
    meta = AlgorithmMeta(
        collective=Collective.ALLREDUCE, ranks=n, in_chunks=n, out_chunks=n, inplace=True, name="msccl_ring"
    )
    return build_algorithm(meta, builders)
