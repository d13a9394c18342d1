"""Two-pass validation of pipeline files; every issue found is reported at once.

Pass 1 (structure) checks the file against the pydantic model :class:`hub.pipeline._file.model.Pipeline`.
Pass 2 (meaning) runs only on a structurally valid file and checks ``requires``, variables,
component ids and kinds, data-kind compatibility, and every step's params against the
component's params model at every matrix point after interpolation.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version as dist_version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ValidationError

from ..._ranges import RANGE_KEYS, is_range, range_issues, range_values
from ..._suggest import did_you_mean
from ...errors import ComponentNotFoundError, HubError, Issue, PipelineValidationError
from ...plugins._identity import FIRST_PARTY
from .._run.env import ManagerSpec, component_ids, manager_for
from .limits import LIMITS, limit
from .loader import LoadedFile, format_path, load_file, load_text
from .matrix import Point, count_points, expand, interpolate, references, resolvable
from .model import MATRIX_TAGS, NAME_PATTERN, VAR_PATTERN, Pipeline

__all__ = ["ValidatedPipeline", "validate_loaded", "validate_text", "validate_file", "KNOWN_PLUGINS"]

#: First-party plugins: the id prefix they register under -> the distribution to install (the
#: reserved names of hub/plugins/_identity.py, less the registry service, which has no components).
KNOWN_PLUGINS: dict[str, str] = {k: v for k, v in FIRST_PARTY.items() if k != "registry"}


@dataclass(frozen=True)
class ValidatedPipeline:
    """A pipeline that passed both validation passes, with its sweep points."""

    model: Pipeline
    points: tuple[Point, ...]
    file: str
    base_dir: Path
    text: str

    @property
    def name(self) -> str:
        return self.model.name or Path(self.file).stem


# ---------------------------------------------------------------- pass 1


_FRIENDLY = {
    "extra_forbidden": "unknown key",
    "missing": "required key is missing",
}


def _structure_issues(loaded: LoadedFile) -> list[Issue]:
    if not isinstance(loaded.data, dict):
        return [loaded.issue((), "the top level must be a mapping", hint="start with 'version: 1'")]
    try:
        Pipeline.model_validate(loaded.data)
    except ValidationError as exc:
        return [_issue_from_error(loaded, (), err) for err in exc.errors()]
    return []


def _allowed_keys(path: tuple[Any, ...]) -> list[str]:
    """Keys the model allows at ``path`` (for "did you mean" on unknown keys)."""
    from .model import ConsumerStep, SourceSpec, TransformStep

    keyed: dict[str, type[BaseModel]] = {"sources": SourceSpec, "consumers": ConsumerStep}
    if len(path) == 0:
        return list(Pipeline.model_fields)
    if len(path) == 2 and path[0] in keyed:
        return list(keyed[path[0]].model_fields)
    if len(path) == 4 and path[0] == "sources" and path[2] == "transforms":
        return list(TransformStep.model_fields)
    return []


def _issue_from_error(
    loaded: LoadedFile, prefix: tuple[Any, ...], err: Mapping[str, Any], fields: list[str] | None = None
) -> Issue:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    if prefix == () and len(loc) >= 3 and loc[0] == "matrix" and loc[2] in MATRIX_TAGS:
        loc = loc[:2] + loc[3:]  # the union tag of a matrix entry is no key of the file
    kind = err["type"]
    is_key = bool(loc) and loc[-1] == "[key]"
    if is_key:
        loc = loc[:-1]
    path = prefix + loc
    hint = None
    if kind == "extra_forbidden":
        message = f"unknown key {loc[-1]!r}"
        allowed = _allowed_keys(path[:-1]) if fields is None else (fields if len(loc) == 1 else [])
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        if close:
            hint = f"did you mean {close[0]!r}?"
        elif allowed:
            hint = "allowed keys: " + ", ".join(allowed)
        return loaded.issue(path, message, hint=hint, key=True)
    if kind == "missing":
        # Point at the key of the mapping that lacks the field.
        # Point at the key of the mapping that lacks the field (the field itself has no position).
        line, column = _line_col(loaded, path[:-1], key=True)
        return Issue(
            message=f"required key {loc[-1]!r} is missing",
            path=format_path(path),
            file=loaded.file,
            line=line,
            column=column,
        )
    message = err["msg"]
    if kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern", "")
        if pattern == NAME_PATTERN:
            message = f"{err['input']!r} is not a valid name"
            hint = "use letters, digits, '_', '-' and '.', starting with a letter or digit"
        elif pattern == VAR_PATTERN:
            message = f"{err['input']!r} is not a valid variable name"
            hint = "use letters, digits and '_', not starting with a digit"
    elif kind == "literal_error" and path == ("version",):
        message = f"unsupported version {err['input']!r}"
        hint = "this collhub reads version: 1"
    elif isinstance((err.get("ctx") or {}).get("error"), HubError):
        cause = err["ctx"]["error"]  # our own value check: its words and its hint (e.g. the size grammar)
        message, hint = cause.message, cause.hint
    elif "input" in err and not isinstance(err["input"], (dict, list)):
        got = repr(err["input"])
        message = f"{message} (got {got if len(got) <= 80 else got[:77] + '...'})"
        if kind in ("literal_error", "enum") and isinstance(err["input"], str):
            choices = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
            guess = did_you_mean(err["input"], choices)
            hint = f"did you mean {guess!r}?" if guess else hint
    return loaded.issue(path, message, hint=hint, key=is_key)


def _line_col(loaded: LoadedFile, path: tuple[Any, ...], *, key: bool = False) -> tuple[int | None, int | None]:
    pos = loaded.locate(path, key=key)
    return (pos.line, pos.column) if pos else (None, None)


# ---------------------------------------------------------------- pass 2


def _requires_issues(loaded: LoadedFile, model: Pipeline) -> list[Issue]:
    from packaging.requirements import InvalidRequirement, Requirement

    issues: list[Issue] = []
    missing: list[str] = []
    outdated: list[str] = []
    located: list[tuple[int, str]] = []
    for i, text in enumerate(model.requires):
        path = ("requires", i)
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            issues.append(
                loaded.issue(path, f"invalid requirement {text!r}: {exc}", hint='write e.g. "collhub-mscclang>=0.1"')
            )
            continue
        try:
            installed = dist_version(req.name)
        except PackageNotFoundError:
            located.append((i, f"{req.name} is not installed (required: {text})"))
            missing.append(text)
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            located.append((i, f"{req.name} {installed} is installed, but the pipeline requires {text}"))
            outdated.append(text)
    commands = []
    if missing:
        commands.append("collhub install " + " ".join(shlex.quote(m) for m in missing))
    if outdated:
        commands.append("collhub install --upgrade " + " ".join(shlex.quote(m) for m in outdated))
    for i, message in located:
        issues.append(loaded.issue(("requires", i), message, hint="run: " + " && ".join(commands)))
    return issues


def _variable_issues(loaded: LoadedFile, model: Pipeline) -> list[Issue]:
    issues: list[Issue] = []
    for name in model.matrix:
        if name in model.vars:
            issues.append(
                loaded.issue(
                    ("matrix", name),
                    f"variable {name!r} is defined in both vars and matrix",
                    hint="rename one of them",
                    key=True,
                )
            )
    for section, values in (("vars", model.vars), ("matrix", model.matrix)):
        for ref, ref_path in references(values):
            issues.append(
                loaded.issue(
                    (section,) + ref_path,
                    f"${{{ref}}} cannot be used inside {section}",
                    hint="vars and matrix values are literal",
                )
            )
    known = set(model.vars) | set(model.matrix)
    envs = [{**model.vars, **p.as_dict()} for p in expand(model.matrix)]
    blocks: list[tuple[tuple[Any, ...], Any, set[str]]] = [(("output",), model.output, set(model.vars))]
    for sname, src in model.sources.items():
        blocks.append((("sources", sname, "params"), src.params, known))
        for i, t in enumerate(src.transforms):
            blocks.append((("sources", sname, "transforms", i, "params"), t.params, known))
    for cname, cons in model.consumers.items():
        blocks.append((("consumers", cname, "params"), cons.params, known))
    for prefix, value, allowed in blocks:
        for ref, ref_path in references(value):
            name = ref.split(".", 1)[0]
            if name in allowed:
                if "." in ref and not all(resolvable(env, ref) for env in envs):
                    issues.append(
                        loaded.issue(
                            prefix + ref_path,
                            f"${{{ref}}}: {name} has no such key at every point",
                            hint=f"give every value of {name} the key {ref.split('.', 1)[1]!r}",
                        )
                    )
                continue
            if name in known:  # a matrix variable in `output`
                issues.append(
                    loaded.issue(
                        prefix + ref_path,
                        f"${{{name}}} is a matrix variable; output may use only vars",
                        hint="one run directory holds every point",
                    )
                )
                continue
            close = difflib.get_close_matches(name, sorted(allowed), n=1)
            hint = (
                f"did you mean ${{{close[0]}}}?"
                if close
                else (
                    "defined variables: " + ", ".join(sorted(allowed))
                    if allowed
                    else "define it under vars: or matrix:"
                )
            )
            issues.append(loaded.issue(prefix + ref_path, f"unknown variable ${{{name}}}", hint=hint))
    return issues


def _unknown_component(cid: str, kind: str, installed: dict[str, str]) -> tuple[str, str | None]:
    prefix = cid.split(".", 1)[0] if "." in cid else ""
    if prefix in KNOWN_PLUGINS and not any(i.startswith(prefix + ".") for i in installed):
        dist = KNOWN_PLUGINS[prefix]
        return (f"{kind} {cid!r} is provided by plugin {dist}, which is not installed", f"collhub install {dist}")
    same_kind = sorted(i for i, k in installed.items() if k == kind)
    candidates = difflib.get_close_matches(cid, same_kind, n=1, cutoff=0.6)
    if not candidates and "." not in cid:
        candidates = [i for i in same_kind if i.split(".", 1)[1] == cid][:1]
    if candidates:
        return f"unknown {kind} {cid!r}", f"did you mean {candidates[0]}?"
    listing = ", ".join(same_kind[:12]) + (" ..." if len(same_kind) > 12 else "")
    return f"unknown {kind} {cid!r}", (f"installed {kind}s: {listing}" if same_kind else f"no {kind}s are installed")


def _resolve(
    loaded: LoadedFile,
    manager: Any,
    installed: dict[str, str],
    path: tuple[Any, ...],
    cid: str,
    kind: str,
    issues: list[Issue],
) -> Any | None:
    try:
        spec = manager.component(cid)
    except (ComponentNotFoundError, KeyError):
        message, hint = _unknown_component(cid, kind, installed)
        issues.append(loaded.issue(path, message, hint=hint))
        return None
    actual = getattr(spec, "kind", kind)
    if actual != kind:
        same = sorted(i for i, k in installed.items() if k == kind)
        close = difflib.get_close_matches(cid, same, n=1, cutoff=0.0)
        hint = f"{kind}s include: " + ", ".join(same[:8]) if same else None
        if close and same:
            hint = f"did you mean the {kind} {close[0]}?"
        issues.append(loaded.issue(path, f"{cid} is a {actual}, not a {kind}", hint=hint))
        return None
    return spec


def _params_issues(
    loaded: LoadedFile,
    spec: Any,
    cid: str,
    prefix: tuple[Any, ...],
    raw: dict[str, Any],
    env_of: list[tuple[Point, dict[str, Any]]],
) -> list[Issue]:
    """Validate ``raw`` against the component's params model at every point.

    Findings identical at several points are reported once, saying at how many points they
    occur. Fields that reference unknown variables are skipped (the variable check reports them).
    """
    try:
        model = spec.load_params()
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not crash validation
        return [loaded.issue(prefix[:-1], f"cannot load the params model of {cid}: {exc}")]
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        dist = getattr(spec, "distribution", "its plugin")
        return [loaded.issue(prefix[:-1], f"the params model of {cid} is not a pydantic model (a bug in {dist})")]
    fields = list(getattr(model, "model_fields", {}))
    found: dict[tuple[str, str], tuple[Issue, list[Point]]] = {}
    refs = list(references(raw))
    # Points whose interpolated params are equal get the same findings: validate each once.
    seen: dict[str, list[Issue]] = {}
    for point, env in env_of:
        unresolved = {prefix + path for ref, path in refs if not resolvable(env, ref)}
        params = interpolate(raw, env, strict=False)
        key = _params_key(params, unresolved)
        point_issues = seen.get(key) if key is not None else None
        if point_issues is None:
            point_issues = _point_issues(loaded, spec, cid, prefix, model, fields, params, unresolved)
            if key is not None:
                seen[key] = point_issues
        for issue in point_issues:
            found.setdefault((issue.path, issue.message), (issue, []))[1].append(point)
    issues = []
    total = len(env_of)
    for issue, points in found.values():
        if total > 1 and len(points) < total:
            issue = Issue(
                message=f"{issue.message} (at {len(points)} of {total} points, e.g. {points[0].label})",
                path=issue.path,
                file=issue.file,
                line=issue.line,
                column=issue.column,
                hint=issue.hint,
            )
        issues.append(issue)
    return issues


def _params_key(params: Any, unresolved: set[tuple[Any, ...]]) -> str | None:
    import json

    try:
        return json.dumps([params, sorted(map(str, unresolved))], sort_keys=True)
    except (TypeError, ValueError):  # a value JSON cannot hold: validate this point on its own
        return None


def _point_issues(
    loaded: LoadedFile,
    spec: Any,
    cid: str,
    prefix: tuple[Any, ...],
    model: Any,
    fields: list[str],
    params: Any,
    unresolved: set[tuple[Any, ...]],
) -> list[Issue]:
    """Findings for one point's interpolated params: the params model, capabilities, topology strings."""
    try:
        validated = model.model_validate(params)
    except ValidationError as exc:
        out = []
        bad = set()
        for err in exc.errors():
            path = prefix + tuple(err["loc"])
            bad.add(err["loc"][0] if err["loc"] else None)
            if any(path[: len(u)] == u for u in unresolved):
                continue
            out.append(_issue_from_error(loaded, prefix, err, fields=fields))
        # One round: the fields that did validate still get their topology and file checks.
        rest = (
            SimpleNamespace(**{k: v for k, v in params.items() if k not in bad}) if isinstance(params, dict) else None
        )
        if rest is not None:
            out += _topology_issues(loaded, prefix, rest, unresolved)
            out += _file_issues(loaded, prefix, rest, unresolved)
        return out
    except Exception as exc:  # noqa: BLE001 - a plugin's validator that raises something else
        return [loaded.issue(prefix, f"the params model of {cid} failed: {type(exc).__name__}: {exc}")]
    from ...plugins._numbers import number_problems

    issues = [
        loaded.issue(prefix + p.loc, p.message, hint=p.hint)
        for p in number_problems(model, params, validated)
        if not any((prefix + p.loc)[: len(u)] == u for u in unresolved)
    ]
    issues += _capability_issues(loaded, spec, cid, prefix, validated)
    issues += _topology_issues(loaded, prefix, validated, unresolved)
    issues += _file_issues(loaded, prefix, validated, unresolved)
    return issues


#: Param names whose string values name input files (MSCCL-IR XML, TACCL profiles and sketches,
#: network.yml, system.json, programs): a missing one fails `pipeline validate`, as `run` would.
FILE_PARAMS = ("path", "topology", "network", "sketch", "system", "program", "profile")
#: What an input file's name ends with (a topology string such as 'ring:8' has none of these).
_FILE_SUFFIXES = (".xml", ".gz", ".json", ".yml", ".yaml", ".py", ".et", ".txt", ".csv")


def _file_issues(
    loaded: LoadedFile, prefix: tuple[Any, ...], params: Any, unresolved: set[tuple[Any, ...]]
) -> list[Issue]:
    """Input files named by params that do not exist (relative paths from the current directory,
    where `collhub run` reads them)."""
    issues = []
    for name in FILE_PARAMS:
        value = getattr(params, name, None)
        value = os.fspath(value) if isinstance(value, os.PathLike) else value
        path = prefix + (name,)
        if not isinstance(value, str) or path in unresolved or ":" in value.split("/")[-1]:
            continue
        if not (value.strip().lower().endswith(_FILE_SUFFIXES) or "/" in value):
            continue
        if not Path(value).expanduser().exists():
            issues.append(
                loaded.issue(
                    path,
                    f"file not found: {value}",
                    hint=f"relative paths are read from the directory you run in ({Path.cwd()})",
                )
            )
    return issues


#: Param names whose string values are topology strings (or network.yml paths); validation parses
#: them at every point, so a bad one fails `pipeline validate`, not the run.
TOPOLOGY_PARAMS = ("network", "topology")


def _topology_issues(
    loaded: LoadedFile, prefix: tuple[Any, ...], params: Any, unresolved: set[tuple[Any, ...]]
) -> list[Issue]:
    from ...errors import HubError
    from ...topology import load_topology

    issues = []
    for name in TOPOLOGY_PARAMS:
        value = getattr(params, name, None)
        path = prefix + (name,)
        if not isinstance(value, str) or path in unresolved:
            continue
        if value.strip().endswith((".yml", ".yaml")) or "/" in value:
            continue  # a network file, relative to where the run happens: the consumer reads it
        try:
            load_topology(value)
        except HubError as exc:
            issues.append(loaded.issue(path, exc.message, hint=exc.hint))
    return issues


def _capability_issues(loaded: LoadedFile, spec: Any, cid: str, prefix: tuple[Any, ...], params: Any) -> list[Issue]:
    """Check the component's declared collectives and rank bounds against validated params."""
    issues: list[Issue] = []
    collectives = {str(c) for c in getattr(spec, "collectives", ()) or ()}
    coll = getattr(params, "collective", None)
    if coll is not None and collectives:
        name = str(getattr(coll, "value", coll))
        if name not in collectives:
            issues.append(
                loaded.issue(
                    prefix + ("collective",),
                    f"{cid} does not implement {name}",
                    hint="supported: " + ", ".join(sorted(collectives)),
                )
            )
    ranks = getattr(params, "ranks", None)
    if isinstance(ranks, int) and not isinstance(ranks, bool):
        lo, hi = getattr(spec, "min_ranks", 1) or 1, getattr(spec, "max_ranks", None)
        if ranks < lo or (hi is not None and ranks > hi):
            bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            issues.append(loaded.issue(prefix + ("ranks",), f"{cid} supports ranks {bound}, not {ranks}"))
    return issues


def _meaning_issues(loaded: LoadedFile, model: Pipeline, manager: Any) -> list[Issue]:
    issues = _requires_issues(loaded, model)
    var_issues = _variable_issues(loaded, model)
    issues += var_issues
    points = expand(model.matrix)
    env_of = [(p, {**model.vars, **p.as_dict()}) for p in points]
    installed = component_ids(manager)

    outputs: dict[str, str] = {}
    for sname, src in model.sources.items():
        base = ("sources", sname)
        spec = _resolve(loaded, manager, installed, base + ("producer",), src.producer, "producer", issues)
        if spec is not None:
            outputs[sname] = str(getattr(spec, "output", "algorithm"))
            issues += _params_issues(loaded, spec, src.producer, base + ("params",), src.params, env_of)
        for i, t in enumerate(src.transforms):
            tpath = base + ("transforms", i)
            tspec = _resolve(loaded, manager, installed, tpath + ("use",), t.use, "transform", issues)
            if tspec is not None:
                issues += _params_issues(loaded, tspec, t.use, tpath + ("params",), t.params, env_of)
                takes = getattr(tspec, "inputs", frozenset({"algorithm"}))
                kind = outputs.get(sname)
                if kind is not None and kind not in takes:
                    issues.append(
                        loaded.issue(
                            tpath + ("use",),
                            f"{t.use} transforms a trace of kind {' or '.join(sorted(takes))}, "
                            f"but {src.producer} produces a {kind}",
                        )
                    )

    for cname, cons in model.consumers.items():
        base = ("consumers", cname)
        for i, s in enumerate(cons.sources or []):
            if s not in model.sources:
                close = difflib.get_close_matches(s, list(model.sources), n=1)
                issues.append(
                    loaded.issue(
                        base + ("sources", i),
                        f"unknown source {s!r}",
                        hint=f"did you mean {close[0]}?" if close else "sources: " + ", ".join(model.sources),
                    )
                )
        spec = _resolve(loaded, manager, installed, base + ("use",), cons.use, "consumer", issues)
        if spec is None:
            continue
        issues += _params_issues(loaded, spec, cons.use, base + ("params",), cons.params, env_of)
        accepts = {str(x) for x in getattr(spec, "inputs", {"algorithm"})}
        for sname in cons.sources or list(model.sources):
            kind = outputs.get(sname)
            if kind is not None and kind not in accepts:
                issues.append(
                    loaded.issue(
                        base + ("use",),
                        f"{cons.use} takes {'/'.join(sorted(accepts))}, but source {sname!r} produces a {kind}",
                        hint="restrict the consumer with sources: [...]",
                    )
                )
    return issues


def _sorted(issues: list[Issue]) -> list[Issue]:
    unique = list(dict.fromkeys(issues))
    return sorted(unique, key=lambda i: (i.line or 0, i.column or 0, i.path, i.message))


def validate_loaded(
    loaded: LoadedFile, *, manager: Any = None, manager_spec: ManagerSpec | None = None
) -> ValidatedPipeline:
    """Run both passes on a loaded file; raise :class:`PipelineValidationError` with every issue.

    One round: when only some sources or consumers are malformed, the meaning pass still runs on
    the rest, so every problem of a file is reported by one ``pipeline validate``."""
    issues = _structure_issues(loaded)
    data = _without_broken_steps(loaded.data, issues) if issues else loaded.data
    if data is None:
        _raise(loaded, issues)
    model = _expand_ranges(loaded, Pipeline.model_validate(data), issues)
    _check_points(loaded, model)
    if manager is None:
        manager = manager_for(manager_spec or ManagerSpec())
    issues += _meaning_issues(loaded, model, manager)
    if issues:
        _raise(loaded, issues)
    base = Path(loaded.file).resolve().parent if not loaded.file.startswith("<") else Path.cwd()
    return ValidatedPipeline(model, tuple(expand(model.matrix)), loaded.file, base, loaded.text)


def _without_broken_steps(data: Any, issues: list[Issue]) -> dict[str, Any] | None:
    """``data`` without the sources and consumers that have structure issues, when that leaves a
    valid file (for the meaning pass of the rest); None when other parts are malformed too."""
    if not isinstance(data, dict):
        return None
    broken: dict[str, set[str]] = {"sources": set(), "consumers": set()}
    for issue in issues:
        parts = issue.path.split(".")
        if len(parts) < 2 or parts[0] not in broken:
            return None
        broken[parts[0]].add(parts[1])
    rest = {k: v for k, v in data.items()}
    for section, names in broken.items():
        if names and isinstance(rest.get(section), dict):
            rest[section] = {k: v for k, v in rest[section].items() if k not in names}
    kept = set(rest.get("sources") or {})
    if isinstance(rest.get("consumers"), dict):  # a consumer naming a dropped source (copies: data stays)
        rest["consumers"] = {
            k: {**c, "sources": [x for x in c["sources"] if x in kept]}
            if isinstance(c, dict) and isinstance(c.get("sources"), list)
            else c
            for k, c in rest["consumers"].items()
        }
    if not rest.get("sources") or not rest.get("consumers"):
        return None
    try:
        Pipeline.model_validate(rest)
    except ValidationError:
        return None
    return rest


def _expand_ranges(loaded: LoadedFile, model: Pipeline, earlier: list[Issue] | None = None) -> Pipeline:
    """The model with every range of the matrix replaced by its list of values; bad ranges (and
    ranges of more values than the point limit, counted before listing) raise with positions,
    together with the ``earlier`` issues."""
    cap = limit("points")
    issues = list(earlier or [])
    for name, value in model.matrix.items():
        if not isinstance(value, dict):
            continue
        for found in range_issues(name, value, cap):
            if found.key is None:
                issues.append(loaded.issue(("matrix", name), found.message, hint=found.hint))
            else:
                # An unknown key is pointed at by its key, a bad bound by its value.
                issues.append(
                    loaded.issue(
                        ("matrix", name, found.key), found.message, hint=found.hint, key=found.key not in RANGE_KEYS
                    )
                )
    if len(issues) > len(earlier or []):
        _raise(loaded, issues)
    if not any(is_range(v) for v in model.matrix.values()):
        return model
    matrix = {n: range_values(n, v) if isinstance(v, dict) else v for n, v in model.matrix.items()}
    return model.model_copy(update={"matrix": matrix})


def _check_points(loaded: LoadedFile, model: Pipeline) -> None:
    """Refuse a matrix past the point limit before anything expands it (1000^3 points would not fit)."""
    total, cap = count_points(model.matrix), limit("points")
    if total > cap:
        sizes = " x ".join(f"{k}[{len(v)}]" for k, v in model.matrix.items())
        var = LIMITS["points"][0]
        _raise(
            loaded,
            [
                loaded.issue(
                    ("matrix",),
                    f"the matrix has {total} points ({sizes}), more than the limit of {cap}",
                    key=True,
                    hint=f"split the sweep into several files, or set {var} to raise the limit",
                )
            ],
        )


def _raise(loaded: LoadedFile, issues: list[Issue]) -> None:
    issues = _sorted(issues)
    first = issues[0]
    more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
    raise PipelineValidationError(
        f"{loaded.file}: {len(issues)} issue(s) in the pipeline; first: {first}{more}",
        issues=issues,
        hint=f"run: collhub pipeline validate {shlex.quote(loaded.file)}" if not loaded.file.startswith("<") else None,
    )


def validate_text(
    text: str, file: str = "<pipeline>", *, manager: Any = None, manager_spec: ManagerSpec | None = None
) -> ValidatedPipeline:
    """Parse and validate pipeline text."""
    return validate_loaded(load_text(text, file), manager=manager, manager_spec=manager_spec)


def validate_file(
    path: str | Path, *, manager: Any = None, manager_spec: ManagerSpec | None = None
) -> ValidatedPipeline:
    """Read, parse and validate a pipeline file."""
    return validate_loaded(load_file(path), manager=manager, manager_spec=manager_spec)
