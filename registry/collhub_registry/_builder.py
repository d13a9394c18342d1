"""Build the static registry site from plugin wheels (no plugin code is imported or run).

Layout (see ``docs/spec/registry.md``)::

    SITE/index.html                 the browsable page (static, works from any file host)
    SITE/v1/index.json              one summary per plugin
    SITE/v1/plugins/<name>.json     every version of one plugin, with files and manifest
    SITE/v1/components.json         reverse index: component id / collective / kind -> plugins
    SITE/v1/errors.json             wheels that failed to index, and why
    SITE/files/<wheel>              the wheels themselves
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from hub.errors import RegistryFormatError, UsageError
from hub.registry import (
    ComponentEntry,
    ComponentsDoc,
    ErrorEntry,
    ErrorsDoc,
    IndexDoc,
    Meta,
    PluginDoc,
    PluginSummary,
    VersionEntry,
    WheelInfo,
    normalize_name,
    read_wheel,
)

from ._pages import index_page, plugin_page

__all__ = ["BuildReport", "build_site"]


@dataclass
class BuildReport:
    site: Path
    plugins: dict[str, list[str]] = field(default_factory=dict)  # name -> versions
    errors: list[ErrorEntry] = field(default_factory=list)


def _requires_hub(info: WheelInfo) -> str:
    if info.manifest.requires_hub:
        return info.manifest.requires_hub
    for line in info.requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if normalize_name(req.name) == "collhub" and not req.marker:
            return str(req.specifier)
    return ""


def _dump(path: Path, model: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = model.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[attr-defined]
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _version_key(text: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(text))
    except InvalidVersion:
        return (0, text)


def _check_out(out: Path, force: bool = False) -> None:
    """Only a missing path, an empty directory or (with ``force``) an earlier site is replaced,
    never other data: a site being served is not swapped away by accident."""
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise UsageError(
            f"{out}: exists and is not a registry site directory; refusing to replace it", hint="pick another --out"
        )
    if any(out.iterdir()) and not (out / "v1" / "index.json").is_file():
        raise UsageError(
            f"{out}: is a non-empty directory that is not a registry site; refusing to replace it",
            hint="pick another --out, or remove it first",
        )
    if not force and any(out.iterdir()):
        raise UsageError(
            f"{out}: a registry site is already there (it may be being served); not replacing it",
            hint="pass --force to replace it (atomically), or pick another --out",
        )


def build_site(
    wheels: Iterable[Path],
    out: Path,
    *,
    yanked: Iterable[str] = (),
    base_url: str | None = None,
    force: bool = False,
) -> BuildReport:
    """Index ``wheels`` into a static site at ``out`` (replaced atomically).

    ``yanked`` lists ``name==version`` pairs to flag as yanked. ``base_url`` is the address the
    site will be served at: the pages' install commands name it (else a placeholder that the
    pages' script fills in from their own address).
    """
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise UsageError(
            f"--url must be an http(s) URL, not {base_url[:200]!r}", hint="e.g. --url https://host/collhub/"
        )
    if base_url is not None and not base_url.endswith("/"):
        base_url += "/"  # the client joins v1/index.json onto it
    out = Path(out)
    now = datetime.now(UTC).replace(microsecond=0).isoformat()
    meta = Meta.model_validate({"api-version": "1.0", "generated-at": now})
    yanked_set = {normalize_name(y.split("==")[0]) + "==" + y.split("==", 1)[1] for y in yanked if "==" in y}
    paths = [Path(w) for w in wheels]
    if not paths:
        raise UsageError("no wheel files given", hint="collhub registry build dist/*.whl --out site")
    infos, errors = _read_wheels(paths)
    _check_out(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        plugins = _write_site(tmp, infos, errors, meta, yanked_set, base_url)
        os.chmod(tmp, 0o755)
        _replace(out, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return BuildReport(site=out, plugins=plugins, errors=errors)


def _read_wheels(paths: list[Path]) -> tuple[dict[str, dict[str, WheelInfo]], list[ErrorEntry]]:
    """Each plugin's wheels by version, and the files that could not be indexed (and why)."""
    infos: dict[str, dict[str, WheelInfo]] = {}
    errors: list[ErrorEntry] = []
    for path in paths:
        if not path.is_file():
            errors.append(
                ErrorEntry(file=path.name, error="no such file" if not path.exists() else "not a regular file")
            )
            continue
        try:
            info = read_wheel(path)
        except RegistryFormatError as exc:
            errors.append(ErrorEntry(file=path.name, error=str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - one odd wheel must not take the others down
            errors.append(
                ErrorEntry(
                    file=path.name,
                    error=f"unexpected {type(exc).__name__} reading the wheel (please report this as a collhub bug)",
                )
            )
            continue
        name = normalize_name(info.name)
        if info.version in infos.get(name, {}):
            errors.append(ErrorEntry(file=path.name, error=f"duplicate {name} {info.version}"))
            continue
        infos.setdefault(name, {})[info.version] = info
    return infos, errors


def _write_site(
    tmp: Path,
    infos: dict[str, dict[str, WheelInfo]],
    errors: list[ErrorEntry],
    meta: Meta,
    yanked_set: set[str],
    base_url: str | None,
) -> dict[str, list[str]]:
    """The whole site into the empty directory ``tmp``: wheels, plugin documents and pages, then
    the index, the reverse index, the errors and the front page. Returns each plugin's versions."""
    files_dir = tmp / "files"
    files_dir.mkdir()
    summaries: list[PluginSummary] = []
    by_id: dict[str, list[str]] = {}
    by_coll: dict[str, list[str]] = {}
    by_kind: dict[str, list[str]] = {}
    plugins: dict[str, list[str]] = {}
    docs: list[PluginDoc] = []
    for name in sorted(infos):
        versions = infos[name]
        entries = {
            v: _version_entry(name, versions[v], files_dir, yanked_set) for v in sorted(versions, key=_version_key)
        }
        candidates = [v for v in entries if not entries[v].yanked] or list(entries)
        latest = max(candidates, key=_version_key)
        doc = PluginDoc(meta=meta, name=name, latest=latest, versions=entries)
        _dump(tmp / "v1" / "plugins" / f"{name}.json", doc)
        docs.append(doc)
        _write_text(tmp / "plugins" / f"{name}.html", plugin_page(doc, versions[latest].requires_dist, base_url))
        summary = _summary(name, latest, entries[latest])
        summaries.append(summary)
        for comp in summary.components:
            by_id.setdefault(comp.id, []).append(name)
            by_kind.setdefault(comp.kind, []).append(name)
            for coll in comp.collectives:
                by_coll.setdefault(coll, []).append(name)
        plugins[name] = list(entries)
    dedupe = lambda d: {k: sorted(set(v)) for k, v in sorted(d.items())}  # noqa: E731
    _dump(tmp / "v1" / "index.json", IndexDoc(meta=meta, plugins=summaries))
    _dump(
        tmp / "v1" / "components.json",
        ComponentsDoc(meta=meta, by_id=dedupe(by_id), by_collective=dedupe(by_coll), by_kind=dedupe(by_kind)),
    )
    _dump(tmp / "v1" / "errors.json", ErrorsDoc(meta=meta, errors=errors))
    _write_text(tmp / "index.html", index_page(docs, base_url))
    css = resources.files("collhub_registry").joinpath("site.css").read_text(encoding="utf-8")
    _write_text(tmp / "site.css", css)
    return plugins


def _version_entry(name: str, info: WheelInfo, files_dir: Path, yanked_set: set[str]) -> VersionEntry:
    """One version of a plugin: its wheel copied into ``files_dir`` and described."""
    shutil.copy2(info.path, files_dir / info.filename)
    mtime = datetime.fromtimestamp(info.path.stat().st_mtime, UTC).replace(microsecond=0)
    return VersionEntry.model_validate(
        {
            "requires_hub": _requires_hub(info),
            "requires_python": info.requires_python,
            "api_version": info.manifest.api_version,
            "yanked": f"{name}=={info.version}" in yanked_set,
            "upload-time": mtime.isoformat(),
            "summary": info.summary,
            "manifest": info.manifest,
            "files": [
                {
                    "filename": info.filename,
                    "url": f"../../files/{info.filename}",
                    "hashes": {"sha256": info.sha256},
                    "size": info.size,
                    "upload-time": mtime.isoformat(),
                }
            ],
        }
    )


def _summary(name: str, latest: str, top: VersionEntry) -> PluginSummary:
    """The index's line of a plugin: its latest version's manifest and components."""
    manifest = top.manifest
    components = [
        ComponentEntry(
            id=f"{manifest.plugin}.{c.name}", kind=c.kind, summary=c.summary, collectives=list(c.collectives)
        )
        for c in manifest.components
    ]
    return PluginSummary(
        name=name,
        display_name=manifest.display_name,
        summary=top.summary,
        latest=latest,
        lifecycle=manifest.lifecycle,
        keywords=list(manifest.keywords),
        components=components,
        requires_hub=top.requires_hub,
    )


def _replace(out: Path, tmp: Path) -> None:
    """Put the finished site ``tmp`` at ``out``, moving an earlier site aside first."""
    if out.exists():
        old = out.with_name(f".{out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)
