"""From answer to runtime: a study's NCCL winners as the CSV of NCCL's example tuner plugin.

NCCL 2.30.7's example tuner (``plugins/tuner/example`` of NVIDIA/nccl, commit ``5067397c``;
built as ``libnccl-tuner-example.so``, loaded with ``NCCL_TUNER_PLUGIN``) reads the file named
by ``NCCL_TUNER_CONFIG_FILE``. Its format, as its ``README.md`` and ``plugin.c`` define it:

* one configuration a line, ``collective_type,min_bytes,max_bytes,algorithm,protocol,channels,
  nNodes,nRanks[,numPipeOps[,regBuff]]``: 8 fields required, the last two optional (omitted:
  match any); a line with fewer than 8 or more than 10 fields is skipped;
* a line starting with ``#`` and an empty line are skipped; lines are read with a 256-byte
  buffer, so every line written here stays far below that (a longer one would be cut in two);
* ``collective_type``: ``broadcast|reduce|allgather|reducescatter|allreduce``; ``algorithm``:
  ``tree|ring|collnet_direct|collnet_chain|nvls|nvls_tree|pat``; ``protocol``: ``ll|ll128|simple``
  (an unknown name silently becomes allreduce / ring / simple, hence the names are checked here);
* a call matches when its collective matches, ``min_bytes <= nBytes <= max_bytes`` (both
  inclusive) and ``nNodes``, ``nRanks``, ``numPipeOps``, ``regBuff`` equal the call's or are
  ``-1`` (any); ``channels`` ``-1`` keeps NCCL's own channel count; the **first** matching line
  wins (its algorithm/protocol gets cost 0), so the lines of one file must not overlap.

Rules of this export (one file per study, because a tuner sees only nodes and ranks, not the
network: two studies of one collective and rank count would shadow each other):

1. **Only NCCL winners.** A size's winner is written when its algorithm was made by an ``nccl.*``
   producer (``summary.producer``); the tuner can only steer NCCL's own algorithms. Other
   winners are left out with a note (``left_out``): at their sizes NCCL keeps its own choice
   (the ``msccl``/``mscclpp`` exports ship those). An ``nccl.auto`` winner whose pick has no
   schedule here (NVLS all-gather / reduce-scatter: the best of Ring/Tree/PAT ran instead) is
   left out too: the study never measured NCCL's pick, and forcing the stand-in would overrule NCCL's own model
   on a comparison that did not include its choice; NCCL keeps its pick.
2. **What is written** is what ran: the schedule's ``nccl_algorithm``/``nccl_protocol`` (for an
   ``nccl.auto`` winner, NCCL's own pick, pinned); ``channels`` -1 when the schedule used NCCL's own count
   (``nccl_channel_cap == nccl_default_channels``), else the forced count; ``nNodes``/``nRanks``
   the system's; ``numPipeOps`` 1 (the study measured one collective per launch; a group of
   several is another regime); ``regBuff`` 0 (the model is NCCL's path without buffer
   registration, under which NCCL may pick differently).
3. **Sizes.** The tuner receives ``nBytes = elementSize x ncclFuncMaxSendRecvCount(count)``
   (``src/enqueue.cc``, ``ncclGetAlgoInfo``): the buffer for all-reduce, the output for
   all-gather, the input for reduce-scatter, i.e. nccl-tests' size, which is the study's size
   unchanged. A size that is not a whole number of elements per rank (``nccl_nbytes`` differs)
   is refused.
4. **Ranges** follow the report's rule 4 (:mod:`hub.results._answer`): the winner measured at a
   size holds from that size up to one byte below the next studied size; the largest size ends
   at itself. Consecutive sizes with the same line are merged. Sizes below the smallest studied
   size, above the largest, or won by another source get no line (NCCL's own choice).
5. **Another machine.** An NCCL winner whose schedule was made for a system (``nccl_network``)
   other than the network the study ran on is refused: its channels and rings are another
   machine's (rule 3 of :mod:`hub.results._baseline`).
6. **Impossible numbers.** A winner below a lower bound is refused (``not_exported``, exit 1)
   unless ``allow_below_bound``, as in the other exports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._answer import Answer, Study, answer
from ._baseline import NCCL_AUTO, algorithm_metadata, canonical_network
from ._export import ExportOutcome, _study_slug

__all__ = ["TUNER_ALGORITHMS", "TUNER_COLLECTIVES", "TUNER_FILE", "TUNER_PROTOCOLS", "export_nccl_tuner"]

TUNER_FILE = "nccl_tuner.conf"
#: collhub collective -> the tuner's collective_type
TUNER_COLLECTIVES = {c: c for c in ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")}
#: NCCL's algorithm names (as NCCL logs them) -> the tuner's
TUNER_ALGORITHMS = {
    "Tree": "tree",
    "Ring": "ring",
    "CollNetDirect": "collnet_direct",
    "CollNetChain": "collnet_chain",
    "NVLS": "nvls",
    "NVLSTree": "nvls_tree",
    "PAT": "pat",
}
TUNER_PROTOCOLS = {"LL": "ll", "LL128": "ll128", "Simple": "simple"}
#: rule 2: one collective per launch, no buffer registration
NUM_PIPE_OPS = 1
REG_BUFF = 0


def _int(meta: dict[str, Any], key: str) -> int | None:
    v = meta.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _line(st: Study, size: int, meta: dict[str, Any]) -> tuple[tuple[Any, ...] | None, str | None]:
    """(the configuration's fields but the size range, None) or (None, why it cannot be written)."""
    coll = TUNER_COLLECTIVES.get(str(st.collective or "").lower())
    if coll is None:
        return None, f"NCCL's tuner has no collective {st.collective!r}"
    algo = TUNER_ALGORITHMS.get(str(meta.get("nccl_algorithm")))
    proto = TUNER_PROTOCOLS.get(str(meta.get("nccl_protocol")))
    nodes, cap = _int(meta, "nccl_nodes"), _int(meta, "nccl_channel_cap")
    if algo is None or proto is None or nodes is None or cap is None or st.ranks is None:
        return None, "its algorithm carries no NCCL provenance (nccl_algorithm, nccl_protocol, nccl_nodes)"
    nbytes = _int(meta, "nccl_nbytes")
    if nbytes is not None and nbytes != size:
        return None, f"NCCL calls this size with {nbytes} bytes (not whole elements per rank)"
    channels = -1 if cap == _int(meta, "nccl_default_channels") else cap
    return (coll, algo, proto, channels, nodes, st.ranks, NUM_PIPE_OPS, REG_BUFF), None


def _study_lines(
    st: Study, algos: dict[str, tuple[str | None, dict[str, Any]]], allow_below_bound: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(written, not_exported, left_out) entries of one study (rules 1-5)."""
    sizes = st.sizes
    after = {s: sizes[i + 1] for i, s in enumerate(sizes[:-1])}
    written: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    for b in st.best:
        hi = after[b.size_bytes] - 1 if b.size_bytes in after else b.size_bytes
        entry = {"source": b.source, "algorithm": b.algorithm, "min_bytes": b.size_bytes, "max_bytes": hi}
        producer, meta = algos.get(b.algorithm or "", (None, {}))
        pick, ran = meta.get("nccl_pick"), f"{meta.get('nccl_algorithm')}/{meta.get('nccl_protocol')}"
        why = None
        if not (producer or "").startswith("nccl."):
            why = f"not an NCCL algorithm ({producer or 'unknown producer'})"
        elif producer == NCCL_AUTO and isinstance(pick, str) and pick != ran:
            why = f"NCCL picks {pick}, which has no schedule here ({ran} was measured): NCCL keeps its pick"
        if why is not None:
            last = left[-1] if left else None
            if last and last["source"] == b.source and last["reason"] == why and last["max_bytes"] + 1 == b.size_bytes:
                last["max_bytes"] = hi  # one note per run of sizes
            else:
                left.append({**entry, "reason": why})
            continue
        fields, why = _line(st, b.size_bytes, meta)
        ran_on, made_for = st.networks.get(b.source), meta.get("nccl_network")
        if (
            why is None
            and isinstance(made_for, str)
            and ran_on
            and canonical_network(made_for) != canonical_network(ran_on)
        ):
            why = f"its schedule is NCCL's for {meta.get('nccl_system')} (network {made_for}), not this study's network"
        if why is None and b.below_bound and not allow_below_bound:
            why = f"its time is {b.below_bound}: not an achievable time (--allow-below-bound exports it)"
        if fields is None or why is not None:
            refused.append({**entry, "reason": why})
            continue
        note = f"NCCL's own pick ({NCCL_AUTO})" if producer == NCCL_AUTO else f"forced ({producer})"
        prev = written[-1] if written else None
        if prev and prev["fields"] == fields and prev["max_bytes"] + 1 == b.size_bytes and prev["note"] == note:
            prev["max_bytes"] = hi
            prev["sizes"].append(b.size_bytes)
            continue
        written.append({**entry, "fields": fields, "sizes": [b.size_bytes], "note": note})
    return written, refused, left


def render(st: Study, written: list[dict[str, Any]], refused: list[dict[str, Any]], left: list[dict[str, Any]]) -> str:
    """The configuration file of one study: comments (each < 200 bytes), then one line per range."""
    from .._units import format_size

    out = [
        "# NCCL example tuner configuration (plugins/tuner/example), written by `collhub report --export nccl-tuner`",
        f"# study: {st.title}"[:190],
        "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff",
        "# min/max: NCCL's nBytes, inclusive; a winner holds up to the next studied size; channels -1: NCCL's own",
    ]
    for e in left:
        out.append(f"# {e['min_bytes']}..{e['max_bytes']}: {e['source']} wins; left out: {e['reason']}"[:190])
    for e in refused:
        out.append(f"# {e['min_bytes']}..{e['max_bytes']}: {e['source']} refused: {e['reason']}"[:190])
    if not written:
        out.append("# no line: NCCL keeps its own choice at every size")
    for e in written:
        out.append(f"# {e['source']} wins at {', '.join(format_size(s) for s in e['sizes'])}: {e['note']}"[:190])
        coll, algo, proto, ch, nodes, ranks, pipe, reg = e["fields"]
        out.append(f"{coll},{e['min_bytes']},{e['max_bytes']},{algo},{proto},{ch},{nodes},{ranks},{pipe},{reg}")
    return "\n".join(out) + "\n"


def export_nccl_tuner(
    run_dir: str | Path,
    out_dir: str | Path,
    *,
    force: bool = False,
    ans: Answer | None = None,
    allow_below_bound: bool = False,
) -> ExportOutcome:
    """Write ``DIR/<NN>-<study>/nccl_tuner.conf`` (and ``tuner.env``) per study and
    ``DIR/export.json``, all or nothing (see the module docstring). An existing ``out_dir`` is
    replaced only with ``force``."""
    from ..atomic import staged_dir
    from ._plot import load_document

    doc, _ = load_document(Path(run_dir))
    if ans is None:
        ans = answer(doc, allow_below_bound=allow_below_bound)
    algos = algorithm_metadata(doc)
    final = Path(out_dir).resolve()
    if final.exists() and not force and (not final.is_dir() or any(final.iterdir())):
        raise UsageError(f"{out_dir} already exists", hint="choose another directory, or pass --force to replace it")
    with staged_dir(final, replace=True) as tmp:
        outcome = ExportOutcome(final, "nccl-tuner")
        for i, st in enumerate(ans.studies):
            slug = _study_slug(i, st)
            written, refused, left = _study_lines(st, algos, allow_below_bound)
            (tmp / slug).mkdir()
            conf = final / slug / TUNER_FILE
            (tmp / slug / TUNER_FILE).write_text(render(st, written, refused, left), encoding="utf-8")
            env = (
                "# collhub: load NCCL's example tuner with this configuration (build it from NVIDIA/nccl\n"
                "# plugins/tuner/example; NCCL_TUNER_PLUGIN takes its name or the path of the .so)\n"
                "NCCL_TUNER_PLUGIN=libnccl-tuner-example.so\n"
                f"NCCL_TUNER_CONFIG_FILE={conf}\n"
            )
            (tmp / slug / "tuner.env").write_text(env, encoding="utf-8")
            outcome.studies.append(
                {
                    "title": st.title,
                    "key": st.key,
                    "dir": str(final / slug),
                    "env": str(final / slug / "tuner.env"),
                    "file": str(conf),
                    "exported": [
                        {**{k: v for k, v in e.items() if k != "fields"}, "line": _fields_dict(e)} for e in written
                    ],
                    "not_exported": refused,
                    "left_out": left,
                    "set_apart": [
                        {"source": s, "size_bytes": z, "time_us": t, "reason": w} for s, z, t, w in st.set_apart
                    ],
                }
            )
        (tmp / "export.json").write_text(json.dumps(outcome.as_dict(), indent=1) + "\n", encoding="utf-8")
    return outcome


def _fields_dict(e: dict[str, Any]) -> dict[str, Any]:
    coll, algo, proto, ch, nodes, ranks, pipe, reg = e["fields"]
    return {
        "collective_type": coll,
        "min_bytes": e["min_bytes"],
        "max_bytes": e["max_bytes"],
        "algorithm": algo,
        "protocol": proto,
        "channels": ch,
        "nNodes": nodes,
        "nRanks": ranks,
        "numPipeOps": pipe,
        "regBuff": reg,
    }
