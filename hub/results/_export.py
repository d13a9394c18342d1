"""From answer to runtime: the winners of a study as MSCCL-IR files the MSCCL runtimes load.

For every study (one network, collective and rank count) the export writes, under
``DIR/<NN>-<study>/``:

* ``msccl-algorithms/<k>-<source>-<min>-<max>.xml``: each winning segment (for a source
  synthesized per size, each of its sizes' own algorithm over that size's part of the range),
  re-produced from the run's recorded ET files (``algorithms/<source>-<hash>/``, the exact algorithm that won) and
  written by the ``mscclang.export`` consumer with ``min_bytes``/``max_bytes`` set to the
  segment's size range (inclusive; the consumer translates them to the target runtime's
  ``minBytes``/``maxBytes`` rules) and ``verify`` on, so a file that would not compute its
  collective is refused, not written;
* ``msccl.env``: the environment lines that load them (the executor and RCCL read every file of
  ``MSCCL_ALGO_DIR``, hence the directory holds nothing else; the old runtime takes
  ``MSCCL_XML_FILES``, at most 4 files).

``export_mscclpp`` does the same for MSCCL++: ``mscclpp-plans/<k>-<source>-<min>-<max>.json``,
written by the ``mscclpp.export`` consumer with ``min_message_size``/``max_message_size`` set to
the segment's range (MSCCL++ checks the call size against them: the input for all-reduce,
reduce-scatter and all-to-all, the output for all-gather, which is nccl-tests' size of each) and
``verify`` on; no environment file (plans are registered through MSCCL++'s Python API).

One study per directory because a cluster has one network: two studies with the same collective
and rank count would otherwise shadow each other (the executor takes the first match).
``DIR/export.json`` lists every winner with its file, or with the reason it could not be
exported (the plugin is missing, the target cannot express the algorithm, ...). The whole set is
written to a temporary directory and renamed into place, so a failure leaves nothing behind.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HubError, UsageError
from ._answer import Answer, Study, answer

__all__ = ["ExportOutcome", "TARGETS", "export_msccl", "export_mscclpp"]

#: target runtime -> how its environment loads a directory of algorithms
TARGETS = ("msccl-executor-nccl", "rccl", "msccl-legacy")
#: The old runtime (microsoft/msccl) loads at most this many algorithms.
LEGACY_MAX_FILES = 4
COMPONENT = "mscclang.export"
#: MSCCL++ plans: (component, plugin distribution, sub-directory, file suffix)
MSCCLPP = ("mscclpp.export", "collhub-mscclpp", "mscclpp-plans", ".json")
MSCCL = (COMPONENT, "collhub-mscclang", "msccl-algorithms", ".xml")


@dataclass
class ExportOutcome:
    """What an export wrote: per study its directory, env file, files and the winners left out."""

    out_dir: Path
    target: str
    studies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exported(self) -> list[dict[str, Any]]:
        return [e for s in self.studies for e in s["exported"]]

    @property
    def not_exported(self) -> list[dict[str, Any]]:
        return [e for s in self.studies for e in s["not_exported"]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": "collhub-nccl-tuner-export/1" if self.target == "nccl-tuner" else "collhub-msccl-export/1",
            "out_dir": str(self.out_dir),
            "target": self.target,
            "studies": self.studies,
        }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "study"


def _study_slug(i: int, st: Study) -> str:
    keep = {k: v for k, v in st.key.items() if k not in ("consumer", "collective", "ranks")}
    words = [f"{k}-{v}" for k, v in keep.items()] + [str(st.collective or ""), str(st.consumer or "")]
    return f"{i:02d}-" + _slug("_".join(w for w in words if w))


def _prefixes(doc: dict[str, Any], run_dir: Path) -> dict[str, Path]:
    """algorithm dir -> the ET prefix of its files (``<run>/algorithms/ring-<hash>/ring``)."""
    out: dict[str, Path] = {}
    for a in doc.get("algorithms") or []:
        files = a.get("files") if isinstance(a, dict) else None
        if isinstance(files, list) and files and isinstance(a.get("dir"), str):
            first = str(files[0])
            out[a["dir"]] = run_dir / re.sub(r"\.0\.et$", "", first)
    return out


def _env_lines(target: str, algo_dir: Path, files: list[Path]) -> list[str]:
    head = [
        f"# collhub: load these MSCCL-IR files on the {target} runtime (paths as written; edit them if",
        "# you move the directory). Sizes outside every file's range fall back to NCCL's own algorithms.",
    ]
    if target == "msccl-legacy":
        return head + ["MSCCL_XML_FILES=" + ":".join(str(f) for f in files), "NCCL_ALGO=MSCCL,RING,TREE"]
    if target == "rccl":
        return head + [
            "RCCL_MSCCL_ENABLE=1",
            "# RCCL enables MSCCL on some GPU models only; this forces it on others:",
            "RCCL_MSCCL_FORCE_ENABLE=1",
            f"MSCCL_ALGO_DIR={algo_dir}",
        ]
    return head + ["MSCCL_ENABLE=1", f"MSCCL_ALGO_DIR={algo_dir}"]


def _export_piece(
    manager: Any,
    alg: Any,
    entry: dict[str, Any],
    xml: Path,
    target: str,
    workdir: Path,
    kind: tuple[str, ...] = MSCCL,
) -> None:
    from ..plugins import RunContext

    lo, hi = entry["min_bytes"], entry["max_bytes"]
    name = f"{entry['source']}-{lo}-{hi}"
    params: dict[str, Any]
    if kind is MSCCLPP:
        params = {"out": str(xml), "min_message_size": lo, "max_message_size": hi, "verify": True, "name": name}
    else:
        params = {"out": str(xml), "target": target, "min_bytes": lo, "max_bytes": hi, "verify": True, "name": name}
    manager.run_consumer(kind[0], alg, params, RunContext(workdir=workdir, quiet=True))


def _pieces(st: Study) -> list[dict[str, Any]]:
    """One entry per file to write: each segment's runs of sizes with the same algorithm files
    (a synthesized source has one per size), with the reason a below-bound winner is refused."""
    below = {b.size_bytes: b.below_bound for b in st.best if b.below_bound}
    out = []
    for seg in st.segments:
        for alg, lo, hi in seg.pieces():
            why = next((below[s] for s in seg.sizes if lo <= s <= hi and s in below), None)
            out.append(
                {
                    "source": seg.source,
                    "algorithm": alg,
                    "collective": st.collective,
                    "ranks": st.ranks,
                    "min_bytes": lo,
                    "max_bytes": hi,
                    "below_bound": why,
                }
            )
    return out


def _export_study(
    manager: Any,
    st: Study,
    prefixes: dict[str, Path],
    tmp: Path,
    final: Path,
    slug: str,
    target: str,
    missing_plugin: str | None,
    allow_below_bound: bool = False,
    kind: tuple[str, ...] = MSCCL,
) -> dict[str, Any]:
    from .._units import format_size
    from ..chakra import Algorithm, read_trace

    sub = kind[2]
    algo_tmp = tmp / slug / sub
    algo_tmp.mkdir(parents=True)
    exported: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    for k, entry in enumerate(_pieces(st)):
        lo, hi = entry["min_bytes"], entry["max_bytes"]
        name = f"{k:02d}-{_slug(entry['source'])}-{format_size(lo)}-{format_size(hi)}{kind[3]}"
        reason = missing_plugin
        if reason is None and entry["below_bound"] and not allow_below_bound:
            reason = f"its time is {entry['below_bound']}: not an achievable time (--allow-below-bound exports it)"
        if reason is None and target == "msccl-legacy" and len(exported) >= LEGACY_MAX_FILES:
            reason = f"the msccl-legacy runtime loads at most {LEGACY_MAX_FILES} algorithms"
        prefix = prefixes.get(entry["algorithm"] or "")
        if reason is None and prefix is None:
            reason = "the run recorded no algorithm files for this winner"
        if reason is None:
            try:
                alg = read_trace(prefix)  # type: ignore[arg-type] # checked just above
                if not isinstance(alg, Algorithm):
                    raise UsageError(f"{prefix} holds a workload, not an algorithm")
                _export_piece(manager, alg, entry, algo_tmp / name, target, tmp, kind)
            except HubError as exc:
                reason = exc.message.splitlines()[0] if exc.message else type(exc).__name__
        if reason is not None:
            left.append({**entry, "reason": reason})
        else:
            exported.append({**entry, "file": str(final / slug / sub / name)})
    env = final / slug / "msccl.env"
    if exported and kind is MSCCL:
        files = [Path(e["file"]) for e in exported]
        text = "\n".join(_env_lines(target, final / slug / "msccl-algorithms", files)) + "\n"
        (tmp / slug / "msccl.env").write_text(text, encoding="utf-8")
    return {
        "title": st.title,
        "key": st.key,
        "dir": str(final / slug),
        "env": str(env) if exported and kind is MSCCL else None,
        "exported": exported,
        "not_exported": left,
        # rows below a lower bound never win (hub/results/_answer.py, rule 2), so never ship
        "set_apart": [
            {"source": src, "size_bytes": size, "time_us": t, "reason": why} for src, size, t, why in st.set_apart
        ],
    }


def export_msccl(
    run_dir: str | Path,
    out_dir: str | Path,
    *,
    target: str = "msccl-executor-nccl",
    force: bool = False,
    ans: Answer | None = None,
    allow_below_bound: bool = False,
    kind: tuple[str, ...] = MSCCL,
) -> ExportOutcome:
    """Export the winners of the run in ``run_dir`` to ``out_dir`` (see the module docstring).

    ``target`` is the runtime (``msccl-executor-nccl``, ``rccl`` or ``msccl-legacy``). An existing
    ``out_dir`` is replaced only with ``force``. Winners that cannot be exported are listed in
    the outcome (``not_exported``, each with its reason); nothing is raised for them."""
    from ..atomic import staged_dir
    from ..errors import ComponentNotFoundError
    from ..plugins import get_manager
    from ._plot import load_document

    if target not in TARGETS:
        raise UsageError(f"unknown MSCCL target {target!r}", hint="choose one of: " + ", ".join(TARGETS))
    run = Path(run_dir)
    doc, _ = load_document(run)
    if ans is None:
        ans = answer(doc, allow_below_bound=allow_below_bound)
    final = Path(out_dir).resolve()
    if final.exists() and not force and (not final.is_dir() or any(final.iterdir())):
        raise UsageError(f"{out_dir} already exists", hint="choose another directory, or pass --force to replace it")
    manager = get_manager()
    missing = None
    try:
        manager.component(kind[0])
    except ComponentNotFoundError:
        missing = f"{kind[0]} is not installed (pip install {kind[1]})"
    run_root = run if run.is_dir() else run.parent
    prefixes = _prefixes(doc, run_root)
    with staged_dir(final, replace=True) as tmp:
        outcome = ExportOutcome(final, target if kind is MSCCL else "mscclpp")
        for i, st in enumerate(ans.studies):
            outcome.studies.append(
                _export_study(
                    manager, st, prefixes, tmp, final, _study_slug(i, st), target, missing, allow_below_bound, kind
                )
            )
        (tmp / "export.json").write_text(json.dumps(outcome.as_dict(), indent=1) + "\n", encoding="utf-8")
    return outcome


def export_mscclpp(
    run_dir: str | Path,
    out_dir: str | Path,
    *,
    force: bool = False,
    ans: Answer | None = None,
    allow_below_bound: bool = False,
) -> ExportOutcome:
    """Export the winners of the run in ``run_dir`` to ``out_dir`` as MSCCL++ execution plans,
    each with its size window (see the module docstring)."""
    return export_msccl(run_dir, out_dir, force=force, ans=ans, allow_below_bound=allow_below_bound, kind=MSCCLPP)
