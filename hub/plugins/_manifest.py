"""Check a plugin's static manifest (``collhub-plugin.toml``), optionally against its code.

The registry lists and searches plugins from their manifest alone, so a manifest that drifts
from what the plugin really registers misleads every user of the registry. :func:`validate_plugin`
reads the manifest of a plugin *project directory*, a *wheel* or an *installed distribution*
without running any plugin code, and reports every problem it finds. With ``imports=True`` it
also imports the plugin's registration module into an isolated manager and compares the
components the code registers with those the manifest declares (kind, name, collectives, and
inputs / outputs / capabilities where the manifest states them).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from .._names import normalize_name
from ..errors import HubError, NotInstalledError, RegistryFormatError, UsageError

__all__ = ["ManifestCheck", "ManifestProblem", "validate_plugin"]

PLUGIN_GROUP = "collhub"
MANIFEST_GROUP = "collhub.manifest"
MANIFEST_FILE = "collhub-plugin.toml"
_DATA_KINDS = ("algorithm", "workload")


@dataclass(frozen=True)
class ManifestProblem:
    """One finding: ``where`` names the file, field or component it is about."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


@dataclass
class ManifestCheck:
    """What :func:`validate_plugin` found. ``ok`` when there is no problem (warnings allowed)."""

    target: str
    source: str  # "project" | "wheel" | "installed"
    distribution: str | None = None
    version: str | None = None
    manifest_file: str | None = None
    manifest: Any = None  # hub.registry.Manifest once it parsed
    problems: list[ManifestProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    imports_checked: bool = False
    #: components the code registers (``--imports`` only): dicts with id, kind, collectives, ...
    registered: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, where: str, message: str) -> None:
        self.problems.append(ManifestProblem(where, message))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (what ``collhub plugins validate --format json`` prints)."""
        return {
            "target": self.target,
            "source": self.source,
            "distribution": self.distribution,
            "version": self.version,
            "manifest_file": self.manifest_file,
            "ok": self.ok,
            "imports_checked": self.imports_checked,
            "manifest": None if self.manifest is None else self.manifest.model_dump(mode="json"),
            "registered": self.registered,
            "problems": [{"where": p.where, "message": p.message} for p in self.problems],
            "warnings": list(self.warnings),
        }


@dataclass
class _Source:
    """Where the plugin's metadata came from, and how to import its code (``--imports``)."""

    distribution: str | None = None
    version: str | None = None
    entry_points: dict[str, dict[str, str]] = field(default_factory=dict)
    manifest_text: str | None = None
    manifest_label: str | None = None
    #: a sys.path entry that makes the plugin importable (project dir, src dir, or the wheel)
    path_entry: Path | None = None


# --------------------------------------------------------------------------- public entry
def validate_plugin(target: str | Path, *, imports: bool = False) -> ManifestCheck:
    """Validate the manifest of ``target``: a project directory, a ``.whl`` file or a distribution name.

    Without ``imports`` no plugin code runs (files are read as text; an installed package is
    located with ``importlib.util.find_spec``, which does not execute it). Raises
    :class:`~hub.errors.UsageError` when ``target`` is none of the three; every problem *of
    the plugin* is reported in the returned :class:`ManifestCheck`.
    """
    text = str(target)
    path = Path(text)
    if path.is_dir():
        check = ManifestCheck(target=text, source="project")
        src = _from_project(path, check)
    elif path.is_file() and path.suffix == ".whl":
        check = ManifestCheck(target=text, source="wheel")
        src = _from_wheel(path, check)
    elif path.exists():
        raise UsageError(
            f"{text}: not a plugin project directory or a .whl file",
            hint="give a directory with pyproject.toml, a wheel, or an installed distribution name",
        )
    else:
        check = ManifestCheck(target=text, source="installed")
        src = _from_installed(text, check)
    if src is None:
        return check
    check.distribution, check.version = src.distribution, src.version
    check.manifest_file = src.manifest_label
    _check_entry_points(src, check)
    if src.manifest_text is not None:
        check.manifest = _parse_manifest(src.manifest_text, src.manifest_label or MANIFEST_FILE, check)
    if check.manifest is not None:
        _check_manifest(check.manifest, src, check)
    if imports:
        _check_imports(src, check)
    return check


# --------------------------------------------------------------------------- sources
def _from_project(root: Path, check: ManifestCheck) -> _Source | None:
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        raise UsageError(f"{root}: no pyproject.toml", hint="give the root directory of a plugin project")
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        check.problem(str(pyproject), f"cannot read: {exc}")
        return None
    project = data.get("project") or {}
    src = _Source(distribution=project.get("name"), version=project.get("version") or "(dynamic)")
    raw_eps = project.get("entry-points") or {}
    src.entry_points = {
        g: {str(k): str(v) for k, v in (eps or {}).items()} for g, eps in raw_eps.items() if isinstance(eps, dict)
    }
    if not src.distribution:
        check.problem(str(pyproject), "[project] has no name")
    # Flat layout (pkg/ next to pyproject.toml) or src layout (src/pkg/).
    root = root.resolve()
    src.path_entry = root / "src" if (root / "src").is_dir() and not _has_packages(root, src) else root
    package, resource = _manifest_ref(src, check)
    if package is None:
        return src
    pkg_dir = src.path_entry.joinpath(*package.split("."))
    manifest = pkg_dir / resource
    src.manifest_label = str(manifest)
    try:
        src.manifest_text = manifest.read_text(encoding="utf-8")
    except FileNotFoundError:
        check.problem(str(manifest), "manifest file does not exist")
        return src
    except (OSError, UnicodeDecodeError) as exc:
        check.problem(str(manifest), f"cannot read: {exc}")
        return src
    _check_package_data(data, package, resource, pyproject, check)
    return src


def _has_packages(root: Path, src: _Source) -> bool:
    """True when an entry point's top-level package sits directly under ``root`` (flat layout)."""
    for eps in src.entry_points.values():
        for value in eps.values():
            top = value.split(":", 1)[0].split(".", 1)[0].strip()
            if top and ((root / top).is_dir() or (root / f"{top}.py").is_file()):
                return True
    return False


def _check_package_data(
    data: dict[str, Any], package: str, resource: str, pyproject: Path, check: ManifestCheck
) -> None:
    """With setuptools' explicit package-data, the manifest must be listed or wheels lack it."""
    import fnmatch

    setuptools_cfg = (data.get("tool") or {}).get("setuptools") or {}
    package_data = setuptools_cfg.get("package-data")
    if not isinstance(package_data, dict) or setuptools_cfg.get("include-package-data") is True:
        return
    patterns = list(package_data.get(package, [])) + list(package_data.get("*", []))
    if not any(fnmatch.fnmatch(resource, p) for p in patterns):
        check.problem(
            str(pyproject),
            f"[tool.setuptools.package-data] {package} does not include {resource!r}, so built wheels "
            f"would lack the manifest (add {package} = [..., {resource!r}])",
        )


def _from_wheel(path: Path, check: ManifestCheck) -> _Source | None:
    from ..registry import read_wheel

    try:
        info = read_wheel(path)
    except RegistryFormatError as exc:
        # read_wheel stops at the first fault; it already lists every field of a bad manifest.
        check.problem(path.name, exc.message.removeprefix(f"{path.name}: "))
        return None
    src = _Source(
        distribution=info.name, version=info.version, entry_points=info.entry_points, path_entry=path.resolve()
    )
    package, resource = _manifest_ref(src, check)
    if package is not None:
        src.manifest_label = f"{path.name}:{'/'.join(package.split('.'))}/{resource}"
    # read_wheel validated the manifest; keep its text path uniform with the other sources.
    src.manifest_text = None
    check.manifest = info.manifest
    return src


def _from_installed(name: str, check: ManifestCheck) -> _Source | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        # a missing input exits 3, as a missing trace, pipeline file or uninstall target does
        raise NotInstalledError(
            f"{name}: no such directory, wheel file or installed distribution",
            hint="give a plugin project directory, a .whl file, or the name of an installed plugin distribution",
        ) from None
    src = _Source(distribution=dist.metadata["Name"] or name, version=dist.version)
    for ep in dist.entry_points:
        src.entry_points.setdefault(ep.group, {})[ep.name] = ep.value
    package, resource = _manifest_ref(src, check)
    if package is None:
        return src
    rel = "/".join(package.split(".")) + "/" + resource
    src.manifest_label = f"{src.distribution}:{rel}"
    text = _read_installed_resource(dist, package, resource)
    if text is None:
        check.problem(src.manifest_label, "manifest file is not installed (missing from the package data?)")
    src.manifest_text = text
    return src


def _read_installed_resource(dist: metadata.Distribution, package: str, resource: str) -> str | None:
    """Read ``package/resource`` of an installed distribution without importing ``package``.

    ``importlib.resources.files(package)`` would run the package's ``__init__``; instead use the
    RECORD (``dist.files``) and, for editable installs whose RECORD lacks package files,
    ``find_spec`` on the top-level package (which does not execute it) and walk down directories.
    """
    rel = "/".join(package.split(".")) + "/" + resource
    for f in dist.files or ():
        if str(f).replace("\\", "/") == rel:
            try:
                return Path(str(dist.locate_file(f))).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
    parts = package.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        candidate = Path(base).joinpath(*parts[1:], resource)
        if candidate.is_file():
            try:
                return candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
    return None


def _manifest_ref(src: _Source, check: ManifestCheck) -> tuple[str | None, str]:
    """The package and file name the ``collhub.manifest`` entry point names.

    Without that entry point, fall back to ``collhub-plugin.toml`` in the package of the
    ``collhub`` entry point so that the file's contents are still checked.
    """
    manifests = src.entry_points.get(MANIFEST_GROUP, {})
    if len(manifests) == 1:
        ref = next(iter(manifests.values())).strip()
        package, _, resource = ref.partition(":")
        resource = resource.strip() or MANIFEST_FILE
        if not package or ".." in resource or resource.startswith("/") or "/" in package:
            check.problem(f"entry point {MANIFEST_GROUP}", f"bad manifest reference {ref!r}")
            return None, resource
        return package.strip(), resource
    plugins = src.entry_points.get(PLUGIN_GROUP, {})
    if len(plugins) == 1:
        module = next(iter(plugins.values())).split(":", 1)[0].strip()
        package = module.rsplit(".", 1)[0] if "." in module else module
        return package, MANIFEST_FILE
    return None, MANIFEST_FILE


# --------------------------------------------------------------------------- checks
def _check_entry_points(src: _Source, check: ManifestCheck) -> None:
    plugins = src.entry_points.get(PLUGIN_GROUP, {})
    manifests = src.entry_points.get(MANIFEST_GROUP, {})
    if not plugins:
        check.problem(f"entry points [{PLUGIN_GROUP}]", "none declared; this is not a collhub plugin")
    elif len(plugins) > 1:
        check.warnings.append(
            f"several [{PLUGIN_GROUP}] entry points ({', '.join(sorted(plugins))}); the manifest describes one of them"
        )
    if len(manifests) != 1:
        found = "none" if not manifests else f"{len(manifests)} ({', '.join(sorted(manifests))})"
        line = '<plugin> = "<package>"'
        if len(plugins) == 1:  # we know both names: say exactly what to write
            name, value = next(iter(plugins.items()))
            module = value.split(":", 1)[0].strip()
            line = f'{name} = "{module.rsplit(".", 1)[0] if "." in module else module}"'
        check.problem(
            f'entry points ["{MANIFEST_GROUP}"]',
            f"expected exactly one, found {found}; the registry rejects such wheels "
            f'(add [project.entry-points."{MANIFEST_GROUP}"] {line})',
        )


def _parse_manifest(text: str, label: str, check: ManifestCheck) -> Any:
    """Parse with the registry's own parser; on failure list every invalid field separately."""
    from pydantic import ValidationError

    from ..registry import Manifest, read_manifest_text

    try:
        return read_manifest_text(text, source=label)
    except RegistryFormatError as exc:
        try:
            Manifest.model_validate(tomllib.loads(text))
        except tomllib.TOMLDecodeError as toml_exc:
            check.problem(label, f"invalid TOML: {toml_exc}")
        except ValidationError as val_exc:
            for e in val_exc.errors():
                loc = ".".join(str(p) for p in e["loc"]) or "<root>"
                check.problem(f"{label}: {loc}", e["msg"])
        else:  # pragma: no cover - both parsers use the same model
            check.problem(label, exc.message)
        return None


def _check_manifest(manifest: Any, src: _Source, check: ManifestCheck) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    from .. import __version__
    from ..chakra import Collective
    from ._spec import PLUGIN_API_VERSION

    label = check.manifest_file or MANIFEST_FILE
    dist = src.distribution or ""
    if dist and normalize_name(manifest.name) != normalize_name(dist):
        check.problem(f"{label}: name", f"{manifest.name!r} differs from the distribution name {dist!r}")
    plugins = src.entry_points.get(PLUGIN_GROUP, {})
    if plugins and manifest.plugin not in plugins:
        check.problem(
            f"{label}: plugin",
            f"{manifest.plugin!r} is not an entry point in [{PLUGIN_GROUP}] (found {', '.join(sorted(plugins))})",
        )
    manifests = src.entry_points.get(MANIFEST_GROUP, {})
    if len(manifests) == 1 and manifest.plugin not in manifests:
        check.problem(
            f'entry points ["{MANIFEST_GROUP}"]',
            f"the entry point is named {next(iter(manifests))!r}; name it {manifest.plugin!r} like the plugin",
        )
    host_major, host_minor = (int(x) for x in PLUGIN_API_VERSION.split("."))
    major, minor = (int(x) for x in manifest.api_version.split("."))
    if major != host_major:
        check.problem(
            f"{label}: api_version",
            f"{manifest.api_version} has another major than this collhub's "
            f"plugin API {PLUGIN_API_VERSION}; collhub refuses to load it",
        )
    elif minor > host_minor:
        check.warnings.append(f"api_version {manifest.api_version} is newer than this collhub's {PLUGIN_API_VERSION}")
    if manifest.requires_hub:
        try:
            spec = SpecifierSet(manifest.requires_hub)
        except InvalidSpecifier:
            check.problem(
                f"{label}: requires_hub", f"{manifest.requires_hub!r} is not a version specifier (e.g. '>=0.1')"
            )
        else:
            if not spec.contains(Version(__version__), prereleases=True):
                check.warnings.append(f"requires_hub {manifest.requires_hub!r} excludes this collhub ({__version__})")
    known = {c.value for c in Collective}
    seen: dict[str, int] = {}
    for i, comp in enumerate(manifest.components):
        where = f"{label}: components[{i}] ({comp.name})"
        if comp.name in seen:
            check.problem(where, f"name {comp.name!r} repeats components[{seen[comp.name]}]; ids must be unique")
        seen.setdefault(comp.name, i)
        unknown = sorted(set(comp.collectives) - known)
        if unknown:
            check.problem(where, f"unknown collective(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        for key, allowed_kind in (("inputs", "consumer"), ("outputs", "producer")):
            values = getattr(comp, key)
            if values and comp.kind != allowed_kind:
                check.problem(where, f"{key} applies to {allowed_kind}s only, not a {comp.kind}")
            bad = sorted(set(values) - set(_DATA_KINDS))
            if bad:
                check.problem(where, f"{key}: unknown {', '.join(bad)} (use {' or '.join(_DATA_KINDS)})")
        if comp.kind == "producer" and len(comp.outputs) > 1:
            check.problem(where, "a producer has one output (algorithm or workload)")
    if not manifest.components:
        check.warnings.append("the manifest declares no components")


# --------------------------------------------------------------------------- --imports
@contextmanager
def _importable(entry: Path | None) -> Iterator[None]:
    """Temporarily put ``entry`` first on ``sys.path``; forget modules imported from it afterwards."""
    if entry is None:
        yield
        return
    before = set(sys.modules)
    sys.path.insert(0, str(entry))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        try:
            sys.path.remove(str(entry))
        except ValueError:
            pass
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file.startswith(str(entry)):
                del sys.modules[name]


def _check_imports(src: _Source, check: ManifestCheck) -> None:
    from ._manager import create_manager

    check.imports_checked = True
    plugins = src.entry_points.get(PLUGIN_GROUP, {})
    manifest = check.manifest
    if not plugins:
        return
    name = manifest.plugin if manifest is not None and manifest.plugin in plugins else sorted(plugins)[0]
    ref = plugins[name].strip()
    module_name, _, attr = ref.partition(":")
    where = f"entry point {name} = {ref}"
    with _importable(src.path_entry):
        try:
            obj: Any = importlib.import_module(module_name.strip())
            for part in attr.strip().split(".") if attr.strip() else []:
                obj = getattr(obj, part)
        except Exception as exc:  # noqa: BLE001 - the plugin's code failing is a finding
            check.problem(where, f"import failed: {type(exc).__name__}: {exc}")
            return
        if src.path_entry is not None:
            file = str(getattr(sys.modules.get(module_name.strip()), "__file__", "") or "")
            if not file.startswith(str(src.path_entry)):
                check.problem(
                    where,
                    f"imported from {file or '?'}, not from {src.path_entry}: another "
                    "installed copy shadows it; validate in an environment without it",
                )
                return
        pm = create_manager(autoload=False)
        try:
            pm.register(obj, name=name, distribution=src.distribution, version=src.version or "0")
        except HubError as exc:
            check.problem(where, f"registration failed: {exc.message}")
            return
        # still on the plugin's path: comparing params loads its params models
        code = {c.id: c for c in pm.components()}  # type: ignore[attr-defined]  # .id: set on registration
        check.registered = [_registered_dict(c) for c in code.values()]
        declared_api = getattr(obj, "COLLHUB_PLUGIN_API", None)
        if manifest is None:
            return
        label = check.manifest_file or MANIFEST_FILE
        if declared_api is not None and str(declared_api).strip() != manifest.api_version:
            check.problem(
                f"{label}: api_version",
                f"{manifest.api_version} but the code declares COLLHUB_PLUGIN_API = {declared_api!r}",
            )
        declared = {f"{name}.{c.name}": c for c in manifest.components}
        for cid in sorted(set(declared) | set(code)):
            if cid not in code:
                check.problem(cid, f"declared in the manifest ({declared[cid].kind}) but the code does not register it")
                continue
            spec = code[cid]
            if cid not in declared:
                check.problem(cid, f"registered by the code ({spec.kind}) but missing from the manifest")
                continue
            _compare(cid, declared[cid], spec, check)


def _compare(cid: str, comp: Any, spec: Any, check: ManifestCheck) -> None:
    if comp.kind != spec.kind:
        check.problem(cid, f"kind: manifest says {comp.kind}, code registers a {spec.kind}")
    if set(comp.collectives) != set(spec.collectives):
        check.problem(cid, f"collectives: manifest {_fmt(comp.collectives)}, code {_fmt(spec.collectives)}")
    # Optional fields are compared only where the manifest states them.
    if comp.inputs and spec.kind == "consumer" and set(comp.inputs) != set(spec.inputs):
        check.problem(cid, f"inputs: manifest {_fmt(comp.inputs)}, code {_fmt(spec.inputs)}")
    if comp.outputs and spec.kind == "producer" and set(comp.outputs) != {spec.output}:
        check.problem(cid, f"outputs: manifest {_fmt(comp.outputs)}, code {spec.output}")
    if comp.capabilities and set(comp.capabilities) != set(spec.capabilities):
        check.problem(cid, f"capabilities: manifest {_fmt(comp.capabilities)}, code {_fmt(spec.capabilities)}")
    if comp.params:
        _compare_params(cid, comp.params, spec, check)


def _compare_params(cid: str, declared: list[Any], spec: Any, check: ManifestCheck) -> None:
    """Declared params (shown on the registry's pages) must be the params model's fields."""
    try:
        fields = spec.load_params().model_fields
    except Exception as exc:  # noqa: BLE001 - reported like any other mismatch
        check.problem(cid, f"params: cannot load the params model: {type(exc).__name__}: {exc}")
        return
    names = {p.name for p in declared}
    if names != set(fields):
        check.problem(cid, f"params: manifest {_fmt(names)}, code {_fmt(fields)}")
        return
    for p in declared:
        if p.required != fields[p.name].is_required():
            check.problem(
                cid,
                f"params: {p.name} is {'required' if fields[p.name].is_required() else 'optional'} "
                f"in the code but {'required' if p.required else 'optional'} in the manifest",
            )


def _registered_dict(spec: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": spec.id,
        "kind": spec.kind,
        "collectives": sorted(spec.collectives),
        "capabilities": sorted(spec.capabilities),
    }
    if spec.kind == "consumer":
        d["inputs"] = sorted(spec.inputs)
    if spec.kind == "producer":
        d["output"] = spec.output
    return d


def _fmt(values: Any) -> str:
    return ", ".join(sorted(values)) if values else "(any)"
