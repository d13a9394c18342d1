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
from ._validate import check_algorithm
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
        graphs.append(
            {
                "columns": {name: getattr(g, name).tolist() for name, _dt, _d in _COLUMNS},
                "dep_ptr": g.dep_ptr.tolist(),
                "dep_pos": g.dep_pos.tolist(),
                "names": list(g.names) if g.names is not None else None,
                "extra": extra,
            }
        )
    return {
        "format": FORMAT,
        "version": VERSION,
        "meta": {
            "collective": m.collective.value,
            "ranks": m.ranks,
            "in_chunks": m.in_chunks,
            "out_chunks": m.out_chunks,
            "scratch_chunks": m.scratch_chunks,
            "inplace": m.inplace,
            "root": m.root,
            "name": m.name,
            "producer": m.producer,
            "size": m.size,
            "extra": [[k, v] for k, v in m.extra],
        },
        "graphs": graphs,
    }


def _int(md: dict[str, Any], key: str, default: Any = None) -> Any:
    """An integer field of the meta object: 1.5 or "4" is an error, not 1 or 4."""
    v = md.get(key, default) if default is not None else md[key]
    if v is None and key == "size":
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise FormatError(f"meta.{key} is {v!r}, not an integer", hint="see algorithm_to_json's layout")
    return v


def _column(values: Any, name: str, dtype: Any, rank: int) -> np.ndarray:
    """A column of integers that fit ``dtype``; floats and out-of-range values are errors
    (numpy would truncate 1.5 to 1, or wrap 2^32+1 around)."""
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise FormatError(f"graphs[{rank}].{name} must be a list of integers", hint="see algorithm_to_json's layout")
    info = np.iinfo(dtype)
    if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
        raise FormatError(
            f"graphs[{rank}].{name} holds a value outside {np.dtype(dtype).name}",
            hint="see docs/security.md for the ranges of each attribute",
        )
    return arr.astype(dtype)


def _check_deps(ptr: np.ndarray, pos: np.ndarray, n: int, rank: int) -> None:
    if ptr.shape != (n + 1,) or ptr[0] != 0 or ptr[-1] != pos.size or (np.diff(ptr) < 0).any():
        raise FormatError(
            f"graphs[{rank}].dep_ptr is not a CSR index of {n} nodes over {pos.size} dependencies",
            hint="dep_ptr has n+1 non-decreasing entries from 0 to len(dep_pos)",
        )
    if pos.size and (int(pos.min()) < 0 or int(pos.max()) >= n):
        raise FormatError(
            f"graphs[{rank}].dep_pos names a position outside 0..{n - 1}",
            hint="dependencies are positions of nodes of the same rank",
        )


def algorithm_from_json(doc: dict[str, Any]) -> Algorithm:
    """Rebuild an :class:`Algorithm` from :func:`algorithm_to_json`'s dict; implausible values
    are refused as the ET reader refuses them (:func:`hub.chakra.check_algorithm`)."""
    try:
        if doc.get("format") != FORMAT:
            raise FormatError(
                f"not a collhub algorithm JSON document (format {doc.get('format')!r})",
                hint=f'expected "format": "{FORMAT}"',
            )
        if doc.get("version") != VERSION:
            raise FormatError(f"unsupported collhub algorithm JSON version {doc.get('version')!r}")
        md = doc["meta"]
        meta = AlgorithmMeta(
            collective=Collective.parse(md["collective"]),
            ranks=_int(md, "ranks"),
            in_chunks=_int(md, "in_chunks"),
            out_chunks=_int(md, "out_chunks"),
            scratch_chunks=_int(md, "scratch_chunks", 0),
            inplace=bool(md.get("inplace", False)),
            root=_int(md, "root", 0),
            name=str(md.get("name", "")),
            producer=str(md.get("producer", "")),
            size=_int(md, "size", None) if md.get("size") is not None else None,
            extra=tuple((str(k), v) for k, v in md.get("extra", [])),
        )
        if not isinstance(doc["graphs"], list) or len(doc["graphs"]) != meta.ranks:
            raise FormatError(
                f"meta.ranks is {meta.ranks} but graphs holds "
                f"{len(doc['graphs']) if isinstance(doc['graphs'], list) else 'no list'}",
                hint="one graph per rank",
            )
        graphs = []
        for r, gd in enumerate(doc["graphs"]):
            cols = {
                name: _column(gd["columns"][name], name, dt, r) for name, dt, _d in _COLUMNS if name in gd["columns"]
            }
            n = len(cols["ids"])
            ptr = _column(gd["dep_ptr"], "dep_ptr", np.int64, r)
            dpos = _column(gd["dep_pos"], "dep_pos", np.int32, r)
            _check_deps(ptr, dpos, n, r)
            names = gd.get("names")
            if names is not None and (
                not isinstance(names, list) or len(names) != n or not all(isinstance(x, str) for x in names)
            ):
                raise FormatError(f"graphs[{r}].names must be null or {n} strings", hint="one name per node")
            extra: dict[int, list[tuple[str, Any]]] = {}
            for pos, name, field, value in gd.get("extra", []):
                extra.setdefault(int(pos), []).append((str(name), _value_from_json(field, value)))
            graphs.append(
                RankGraph.from_columns(
                    n,
                    dep_ptr=ptr,
                    dep_pos=dpos,
                    names=gd.get("names"),
                    extra={p: tuple(v) for p, v in extra.items()},
                    **cols,
                )
            )
        alg = Algorithm(meta, tuple(graphs))
    except FormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError) as exc:
        raise FormatError(
            f"malformed collhub algorithm JSON: {type(exc).__name__}: {exc}", hint="produce it with algorithm_to_json"
        ) from None
    check_algorithm(alg)
    return alg
