"""A JSON view of an algorithm, lossless for the collhub profile.

Layout (``format`` = ``"collhub.algorithm"``, ``version`` = 1)::

    {"format": "collhub.algorithm", "version": 1,
     "meta": {"collective", "ranks", "in_chunks", "out_chunks", "scratch_chunks", "inplace",
              "root", "name", "producer", "size" (null = symbolic), "extra": [[name, value], ...]},
     "graphs": [{"columns": {"ids": [...], "kind": [...], ...every RankGraph column...},
                 "dep_ptr": [...], "dep_pos": [...],     # dependencies as positions (CSR)
                 "names": [...] | null,
                 "extra": [[position, name, oneof field | null, value], ...]}, ...]}

Bytes values (``bytes_val``/``bytes_list``) are written as hex strings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import FormatError
from ._model import _COLUMNS, Algorithm, AlgorithmMeta, Collective, RankGraph
from ._wire import TypedValue

__all__ = ["algorithm_from_json", "algorithm_to_json"]

FORMAT = "collhub.algorithm"
VERSION = 1


def _value_to_json(value: Any) -> tuple[str | None, Any]:
    if isinstance(value, TypedValue):
        v = value.value
        if value.field == "bytes_val":
            v = bytes(v).hex()
        elif value.field == "bytes_list":
            v = [bytes(x).hex() for x in v]
        return value.field, v
    return None, value


def _value_from_json(field: str | None, value: Any) -> Any:
    if field is None:
        return value
    if field == "bytes_val":
        value = bytes.fromhex(value)
    elif field == "bytes_list":
        value = [bytes.fromhex(x) for x in value]
    return TypedValue(field, value)


def algorithm_to_json(alg: Algorithm) -> dict[str, Any]:
    """The JSON-compatible dict of ``alg`` (see the module docstring for the layout)."""
    m = alg.meta
    graphs = []
    for g in alg.graphs:
        extra = []
        for pos in sorted(g.extra):
            for name, value in g.extra[pos]:
                field, v = _value_to_json(value)
                extra.append([int(pos), name, field, v])
        graphs.append({
            "columns": {name: getattr(g, name).tolist() for name, _dt, _d in _COLUMNS},
            "dep_ptr": g.dep_ptr.tolist(),
            "dep_pos": g.dep_pos.tolist(),
            "names": list(g.names) if g.names is not None else None,
            "extra": extra,
        })
    return {
        "format": FORMAT,
        "version": VERSION,
        "meta": {
            "collective": m.collective.value, "ranks": m.ranks, "in_chunks": m.in_chunks,
            "out_chunks": m.out_chunks, "scratch_chunks": m.scratch_chunks, "inplace": m.inplace,
            "root": m.root, "name": m.name, "producer": m.producer, "size": m.size,
            "extra": [[k, v] for k, v in m.extra],
        },
        "graphs": graphs,
    }


def algorithm_from_json(doc: dict[str, Any]) -> Algorithm:
    """Rebuild an :class:`Algorithm` from :func:`algorithm_to_json`'s dict."""
    try:
        if doc.get("format") != FORMAT:
            raise FormatError(f"not a collhub algorithm JSON document (format {doc.get('format')!r})",
                              hint=f'expected "format": "{FORMAT}"')
        if doc.get("version") != VERSION:
            raise FormatError(f"unsupported collhub algorithm JSON version {doc.get('version')!r}")
        md = doc["meta"]
        meta = AlgorithmMeta(
            collective=Collective.parse(md["collective"]), ranks=int(md["ranks"]),
            in_chunks=int(md["in_chunks"]), out_chunks=int(md["out_chunks"]),
            scratch_chunks=int(md.get("scratch_chunks", 0)), inplace=bool(md.get("inplace", False)),
            root=int(md.get("root", 0)), name=str(md.get("name", "")), producer=str(md.get("producer", "")),
            size=None if md.get("size") is None else int(md["size"]),
            extra=tuple((str(k), v) for k, v in md.get("extra", [])),
        )
        graphs = []
        for r, gd in enumerate(doc["graphs"]):
            cols = {name: np.asarray(gd["columns"][name], dtype=dt) for name, dt, _d in _COLUMNS
                    if name in gd["columns"]}
            n = len(cols["ids"])
            extra: dict[int, list[tuple[str, Any]]] = {}
            for pos, name, field, value in gd.get("extra", []):
                extra.setdefault(int(pos), []).append((str(name), _value_from_json(field, value)))
            graphs.append(RankGraph.from_columns(
                n, dep_ptr=np.asarray(gd["dep_ptr"], np.int64), dep_pos=np.asarray(gd["dep_pos"], np.int32),
                names=gd.get("names"), extra={p: tuple(v) for p, v in extra.items()}, **cols,
            ))
        return Algorithm(meta, tuple(graphs))
    except FormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FormatError(f"malformed collhub algorithm JSON: {type(exc).__name__}: {exc}",
                          hint="produce it with algorithm_to_json") from None
