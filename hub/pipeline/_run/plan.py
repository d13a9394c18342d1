"""Planning a run: every row's slot and content key, the produce groups, and what a resume reuses.

A source is produced once per distinct interpolated spec (a :class:`Group`); every source x
point x consumer is a row whose position in file order (``pos``: source, point, consumer) is
fixed here, so rows can be written as they finish, in any order, and read back in order.
"""

from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._file.matrix import Point, interpolate
from .._file.validate import ValidatedPipeline
from .._record.row import RowSlot, identity
from .._record.rowlog import read_log
from .env import ManagerSpec
from .keys import KeyMaker

__all__ = ["Group", "Plan", "Reuse", "make_plan", "match_log"]


@dataclass
class Group:
    """One distinct interpolated source spec: its produce unit, its rows' slots and jobs."""

    source: str
    spec_key: str
    key: str
    unit: dict[str, Any]
    points: list[Point] = field(default_factory=list)
    #: consume jobs (consumer x point), in file order; each holds its row's slot
    jobs: list[dict[str, Any]] = field(default_factory=list)
    #: slots of the rows without a consumer (a source no consumer reads: one row per point)
    bare: list[RowSlot] = field(default_factory=list)
    result: dict[str, Any] | None = None

    def slots(self) -> list[RowSlot]:
        return self.bare or [RowSlot.from_dict(j["slot"]) for j in self.jobs]

    @property
    def order(self) -> int:
        """The file-order position of the group's first row (where its failure is reported)."""
        first = self.bare[0].pos if self.bare else self.jobs[0]["slot"]["pos"] if self.jobs else 0
        return int(first)


@dataclass
class Plan:
    groups: list[Group]
    total: int
    #: content key -> the positions of the rows that have it (equal points share a key)
    by_key: dict[str, list[int]]
    #: position -> the point index of its row
    point_index: array[int]

    def consume_units(
        self, todo: list[tuple[Group, list[dict[str, Any]]]], base: dict[str, Any], workers: int
    ) -> list[dict[str, Any]]:
        """Batches of jobs per algorithm: big enough to amortize sending the algorithm, small
        enough to keep every worker busy."""
        total = sum(len(j) for _, j in todo)
        batch = max(1, math.ceil(total / (workers * 4))) if workers > 1 else max(1, total)
        units = []
        for g, jobs in todo:
            res = g.result or {}
            for i in range(0, len(jobs), batch):
                units.append(
                    {
                        **base,
                        "kind": "consume",
                        "source": g.source,
                        "algorithm": res["algorithm"],
                        "info": res["info"],
                        "jobs": jobs[i : i + batch],
                    }
                )
        return units


def make_plan(vp: ValidatedPipeline, keys: KeyMaker, mspec: ManagerSpec, debug: bool, timeout: float | None) -> Plan:
    """Every group and row slot of ``vp`` (units get their ``run_dir`` when the run starts)."""
    model = vp.model
    groups: dict[tuple[str, str], Group] = {}
    by_key: dict[str, list[int]] = {}
    index: array[int] = array("q")
    pos = 0
    for sname, src in model.sources.items():
        consumers = [(c, cons) for c, cons in model.consumers.items() if cons.sources is None or sname in cons.sources]
        n_groups = 0
        for point in vp.points:
            env = {**model.vars, **point.as_dict()}
            params = interpolate(src.params, env)
            transforms = [
                {"use": t.use, "params": interpolate(t.params, env), "timeout": t.timeout or timeout}
                for t in src.transforms
            ]
            spec_key = json.dumps(
                {"producer": src.producer, "params": params, "transforms": transforms}, sort_keys=True, default=str
            )
            group = groups.get((sname, spec_key))
            if group is None:
                unit = {
                    "kind": "produce",
                    "manager": mspec.as_dict(),
                    "source": sname,
                    "producer": src.producer,
                    "params": params,
                    "transforms": transforms,
                    "point": point.as_dict(),
                    "spec_key": spec_key,
                    "debug": debug,
                    "timeout": src.timeout or timeout,
                    "workdir": str(Path("artifacts") / sname / f"_produce-{n_groups:03d}"),
                }
                key = keys.produce_key(sname, src.producer, params, transforms)
                group = groups[(sname, spec_key)] = Group(sname, spec_key, key, unit)
                n_groups += 1
            group.points.append(point)
            pdict = point.as_dict()
            if not consumers:
                key = keys.row_key(group.key, None, None, None, pdict)
                slot = RowSlot(pos, sname, None, None, pdict, point.index, key)
                group.bare.append(slot)
                by_key.setdefault(slot.key, []).append(pos)
                index.append(point.index)
                pos += 1
                continue
            for cname, cons in consumers:
                cparams = interpolate(cons.params, env)
                slot = RowSlot(
                    pos,
                    sname,
                    cname,
                    cons.use,
                    pdict,
                    point.index,
                    keys.row_key(group.key, cname, cons.use, cparams, pdict),
                )
                group.jobs.append(
                    {
                        "consumer": cname,
                        "use": cons.use,
                        "params": cparams,
                        "timeout": cons.timeout or timeout,
                        "point": pdict,
                        "point_index": point.index,
                        "workdir": str(Path("artifacts") / sname / point.slug / cname),
                        "slot": slot.as_dict(),
                    }
                )
                by_key.setdefault(slot.key, []).append(pos)
                index.append(point.index)
                pos += 1
    return Plan(list(groups.values()), pos, by_key, index)


@dataclass
class Reuse:
    """What an earlier run directory's ``rows.jsonl`` offers a resumed run."""

    reusable: int = 0
    #: rows of the plan whose source, consumer and point were run before with another content
    #: key (params, plugin version or input file changed): ``source · consumer (point)``
    changed: list[str] = field(default_factory=list)
    #: earlier rows the pipeline no longer has
    dropped: int = 0
    #: earlier failed rows, computed again
    failed: int = 0


def match_log(log: Path, plan: Plan) -> Reuse:
    """Compare an earlier log with the plan, reading it once (nothing is held but counts)."""
    reuse = Reuse()
    identities: dict[tuple[str, str | None, str], str] = {}
    for g in plan.groups:
        for s in g.slots():
            identities[s.identity] = s.key
    seen: set[str] = set()
    for row in read_log(log):
        key = row["key"]
        if key in plan.by_key:
            if key in seen:
                continue
            seen.add(key)
            if row.get("status") == "ok":
                reuse.reusable += len(plan.by_key[key])
            else:
                reuse.failed += 1
            continue
        ident = identity(row.get("source", ""), row.get("consumer"), row.get("point") or {})
        if ident in identities:
            src, cons, point = ident
            reuse.changed.append(f"{src}" + (f" · {cons}" if cons else "") + (f" ({point})" if point else ""))
        else:
            reuse.dropped += 1
    return reuse
