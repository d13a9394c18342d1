"""Registry client (httpx): index look-ups with an ETag cache, search, resolution, verified install.

The registry URL comes from the ``url`` argument, else ``COLLHUB_REGISTRY_URL``, else the
``[registry] url`` key of ``$COLLHUB_CONFIG`` / ``~/.config/collhub/config.toml``.
Responses are cached on disk keyed by URL with their ETag; a failed request falls back to the
cache (offline mode) with a warning. Downloads are checked against the index's sha256 and size
*before* anything is installed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urljoin

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ValidationError

from .._names import normalize_name
from ..errors import (
    IncompatiblePluginError,
    IntegrityError,
    RegistryError,
    RegistryFormatError,
    RegistryUnavailableError,
    UsageError,
)
from ._models import (
    API_VERSION,
    FileEntry,
    IndexDoc,
    PluginDoc,
    PluginSummary,
    VersionEntry,
    valid_name,
)

if TYPE_CHECKING:  # httpx (and _fetch, built on it) is imported by RegistryClient only: every
    # other user of hub.registry (manifests, the site builder, an unknown component's hint) skips it
    import httpx

__all__ = ["InstallPlan", "RegistryClient", "default_registry_url", "prune_unknown"]

DEFAULT_TIMEOUT = (10.0, 5.0)  # seconds per network operation, and to connect (an httpx.Timeout)
#: seconds for everything one client asks (a CLI command: every request, retry, redirect and
#: download), so a server that drips bytes cannot hold a command longer than this
DEFAULT_DEADLINE = 30.0
#: seconds a pip subprocess (install, uninstall) may take; COLLHUB_PIP_TIMEOUT changes it
DEFAULT_PIP_TIMEOUT = 900.0
MAX_DOWNLOAD_BYTES = 200 * 1024 * 1024
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024  # one index document, decompressed
MAX_JSON_DEPTH = 32  # the documented documents nest 7 deep


def _env_deadline() -> float:
    text = os.environ.get("COLLHUB_REGISTRY_DEADLINE", "")
    if not text:
        return DEFAULT_DEADLINE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise UsageError(
            f"COLLHUB_REGISTRY_DEADLINE={text[:40]!r} is not a positive number of seconds",
            hint=f"unset it for the default of {DEFAULT_DEADLINE:g} s",
        )
    return value


def _pip_timeout() -> float:
    text = os.environ.get("COLLHUB_PIP_TIMEOUT", "")
    try:
        value = float(text) if text else DEFAULT_PIP_TIMEOUT
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise UsageError(
            f"COLLHUB_PIP_TIMEOUT={text[:40]!r} is not a positive number of seconds",
            hint=f"unset it for the default of {DEFAULT_PIP_TIMEOUT:g} s",
        )
    return value


def _run_pip(cmd: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run pip with a deadline: a pip that hangs (a stalled index, a lock) ends as a RegistryError."""
    timeout = _pip_timeout()
    try:
        return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RegistryError(
            f"pip did not {what} within {timeout:g} s; stopped",
            hint="retry, or raise COLLHUB_PIP_TIMEOUT",
        ) from None


def _config_file() -> Path:
    env = os.environ.get("COLLHUB_CONFIG")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "collhub" / "config.toml"


def _registry_config() -> dict[str, Any]:
    path = _config_file()
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise UsageError(f"{path}: cannot read config: {' '.join(str(exc).split())}") from None
    section = data.get("registry")
    if section is not None and not isinstance(section, dict):
        raise UsageError(f"{path}: [registry] must be a table")
    return section or {}


def default_registry_url() -> str | None:
    url = os.environ.get("COLLHUB_REGISTRY_URL")
    if url:
        return url
    url = _registry_config().get("url")
    return url if isinstance(url, str) and url else None


def _configured_origins() -> list[str]:
    value = _registry_config().get("allowed_origins", [])
    if not isinstance(value, list) or not all(
        isinstance(v, str) and v.startswith(("http://", "https://")) for v in value
    ):
        raise UsageError(f"{_config_file()}: [registry] allowed_origins must be a list of http(s) URLs")
    return value


def _cache_root() -> Path:
    env = os.environ.get("COLLHUB_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "collhub"


def prune_unknown(model: type[BaseModel], data: Any) -> Any:
    """Drop keys a model does not know (recursively), so newer minor formats still parse."""
    if not isinstance(data, dict):
        return data
    known: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        for key in {name, field.alias or name}:
            if key in data:
                known[key] = _prune_value(field.annotation, data[key])
    return known


def _prune_value(annotation: Any, value: Any) -> Any:
    import typing

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return prune_unknown(annotation, value)
    if origin in (list, tuple) and args and isinstance(value, list):
        return [_prune_value(args[0], v) for v in value]
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _prune_value(args[1], v) for k, v in value.items()}
    for arg in args:  # Optional[Model] and unions
        if isinstance(arg, type) and issubclass(arg, BaseModel) and isinstance(value, dict):
            return prune_unknown(arg, value)
    return value


_HINTS: tuple[tuple[type[RegistryError], str], ...] = (
    (IntegrityError, "the file on the server differs from the one indexed; nothing was installed"),
    (
        RegistryFormatError,
        "the registry serves documents collhub cannot use; tell its maintainer, or use another --registry",
    ),
    (RegistryUnavailableError, "check the URL, retry later, or use --offline"),
    (RegistryError, "see: collhub search, or collhub plugins info NAME --remote"),
)
_F = TypeVar("_F", bound=Callable[..., Any])


def _hinted(fn: _F) -> _F:
    """Give every registry error that leaves ``fn`` a hint (the CLI prints ``hint:`` lines)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RegistryError as exc:
            if exc.hint is None:
                exc.hint = next(h for cls, h in _HINTS if isinstance(exc, cls))
            raise

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True)
class InstallPlan:
    name: str
    version: str
    file: FileEntry
    url: str
    requires_hub: str


class RegistryClient:
    """Talks to one registry site. Use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        cache_dir: Path | None = None,
        timeout: httpx.Timeout | float | None = None,
        retries: int = 2,
        offline: bool = False,
        verify: bool = True,
        max_download_bytes: int = MAX_DOWNLOAD_BYTES,
        max_document_bytes: int = MAX_DOCUMENT_BYTES,
        deadline: float | None = None,
        allowed_origins: Iterable[str] | None = None,
    ) -> None:
        import httpx

        from ._fetch import Fetcher, origin

        if timeout is None:
            timeout = httpx.Timeout(DEFAULT_TIMEOUT[0], connect=DEFAULT_TIMEOUT[1])
        base = url or default_registry_url()
        if not base:
            raise UsageError(
                "no plugin registry configured",
                hint="pass --registry URL, set COLLHUB_REGISTRY_URL, or add [registry] url=... to "
                + str(_config_file()),
            )
        if not base.startswith(("http://", "https://")):
            raise UsageError(
                f"registry URL must be http(s): {base[:200]!r}", hint="e.g. --registry https://host/collhub/"
            )
        try:
            origin(base)
        except ValueError as exc:
            raise UsageError(
                f"bad registry URL {base[:200]!r}: {exc}", hint="e.g. --registry https://host/collhub/"
            ) from None
        self.base_url = base if base.endswith("/") else base + "/"
        digest = hashlib.sha256(self.base_url.encode()).hexdigest()[:16]
        self.cache_dir = (cache_dir or _cache_root() / "registry") / digest
        self.retries = retries
        self.offline = offline
        self.max_download_bytes = max_download_bytes
        self.max_document_bytes = max_document_bytes
        #: seconds for everything this client asks, counted from its first request
        self.deadline = deadline if deadline is not None else _env_deadline()
        self._expires: float | None = None
        from .. import __version__

        origins = list(allowed_origins) if allowed_origins is not None else _configured_origins()
        self._http = Fetcher(
            base_url=self.base_url,
            transport=transport,
            timeout=timeout,
            verify=verify,
            user_agent=f"collhub/{__version__} (+registry client)",
            allowed_origins=frozenset(origins),
            retries=retries,
        )

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- transport ---------------------------------------------------------------------------
    def _remaining(self, url: str) -> float:
        """Seconds left of the client's one deadline (started by its first request)."""
        now = time.monotonic()
        if self._expires is None:
            self._expires = now + self.deadline
        left = self._expires - now
        if left <= 0:
            raise RegistryUnavailableError(
                f"{url}: not asked: the registry deadline of {self.deadline:g} s is spent",
                hint="the registry is slow or stalled; retry later, raise COLLHUB_REGISTRY_DEADLINE, or use --offline",
            )
        return left

    def _cache_paths(self, rel: str) -> tuple[Path, Path]:
        safe = rel.replace("/", "__")
        return self.cache_dir / safe, self.cache_dir / (safe + ".etag")

    @_hinted
    def get_json(self, rel: str) -> dict[str, Any]:
        """GET a registry document, using and refreshing the ETag cache."""
        url = urljoin(self.base_url, rel)
        body_path, etag_path = self._cache_paths(rel)
        cached = body_path.is_file()
        if self.offline:
            if not cached:
                raise RegistryUnavailableError(f"offline and {rel} is not cached", hint="run once online first")
            return self._parse(self._read_cache(body_path), url)
        headers = {"Accept": "application/json"}
        if cached and etag_path.is_file():
            etag = etag_path.read_text(encoding="latin-1").strip()
            if etag.isprintable() and len(etag) < 200:
                headers["If-None-Match"] = etag
        too_large = lambda: RegistryFormatError(  # noqa: E731
            f"{url}: document is larger than {self.max_document_bytes} bytes (decompressed)"
        )
        try:
            resp = self._http.get(
                url,
                headers,
                deadline=self._remaining(url),
                total=self.deadline,
                limit=self.max_document_bytes,
                too_large=too_large,
            )
        except RegistryUnavailableError as exc:
            if cached:
                warnings.warn(f"registry unreachable ({exc}); using cached {rel}", stacklevel=2)
                return self._parse(self._read_cache(body_path), url)
            raise
        if resp.status == 304 and cached:
            return self._parse(self._read_cache(body_path), url)
        if resp.status == 404:
            raise _NotFound(f"{url}: not found")
        if resp.status != 200:
            raise RegistryUnavailableError(f"{url}: HTTP {resp.status}")
        data = self._parse(resp.body, url)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        _atomic_write(body_path, resp.body)
        etag = resp.headers.get("ETag", "")
        if etag and etag.isprintable() and len(etag) < 200:
            _atomic_write(etag_path, etag.encode("latin-1", "replace"))
        else:
            etag_path.unlink(missing_ok=True)
        return data

    def _read_cache(self, path: Path) -> bytes:
        if path.stat().st_size > self.max_document_bytes:
            raise RegistryFormatError(f"{path}: cached document is larger than {self.max_document_bytes} bytes")
        return path.read_bytes()

    @staticmethod
    def _parse(raw: bytes, url: str) -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except RecursionError:
            raise RegistryFormatError(f"{url}: JSON nested too deeply") from None
        except ValueError as exc:  # also UnicodeDecodeError
            raise RegistryFormatError(f"{url}: not JSON ({' '.join(str(exc).split())[:200]})") from None
        if not isinstance(data, dict):
            raise RegistryFormatError(f"{url}: top level must be an object")
        _check_depth(data, url)
        meta = data.get("meta")
        if not isinstance(meta, dict):
            raise RegistryFormatError(f"{url}: meta must be an object with an api-version")
        version = meta.get("api-version")
        parts = version.split(".") if isinstance(version, str) else []
        if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts):
            raise RegistryFormatError(f"{url}: missing or bad meta.api-version {str(version)[:40]!r}")
        major, minor = int(parts[0]), int(parts[1])
        our_major, our_minor = (int(x) for x in API_VERSION.split("."))
        if major > our_major:
            raise RegistryFormatError(
                f"{url}: index api-version {version} is newer than this client ({API_VERSION})",
                hint="upgrade collhub",
            )
        if major == our_major and minor > our_minor:
            warnings.warn(
                f"{url}: index api-version {version} is newer than {API_VERSION}; unknown keys ignored", stacklevel=3
            )
        return data

    def _model(self, model: type[BaseModel], data: dict[str, Any], what: str) -> Any:
        try:
            return model.model_validate(prune_unknown(model, data))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])[:200]
            msg = " ".join(first["msg"].split())[:300]
            raise RegistryFormatError(f"{what}: {loc}: {msg}" if loc else f"{what}: {msg}") from None

    # -- documents ---------------------------------------------------------------------------
    @_hinted
    def index(self) -> IndexDoc:
        return self._model(IndexDoc, self.get_json("v1/index.json"), "v1/index.json")

    @_hinted
    def plugin(self, name: str) -> PluginDoc:
        if not valid_name(name):
            raise UsageError(f"invalid plugin name {name[:200]!r}", hint="a distribution name such as collhub-mscclang")
        rel = f"v1/plugins/{normalize_name(name)}.json"
        try:
            return self._model(PluginDoc, self.get_json(rel), rel)
        except _NotFound:
            raise self._no_such_plugin(name) from None

    def _no_such_plugin(self, name: str) -> RegistryError:
        """A registry miss in the user's words: the name, the registry, the closest names."""
        from .._suggest import did_you_mean

        try:
            names = [p.name for p in self.index().plugins]
        except RegistryError:
            names = []
        near = did_you_mean(name.removeprefix("collhub-"), [n.removeprefix("collhub-") for n in names])
        hint = f"did you mean collhub-{near}?" if near else "collhub search WORD lists what it has"
        return RegistryError(f"the registry at {self.base_url} has no plugin named {name!r}", hint=hint)

    def search(self, query: str = "", *, kind: str | None = None, collective: str | None = None) -> list[PluginSummary]:
        words = [w for w in query.lower().split() if w]
        found = []
        for p in self.index().plugins:
            comps = p.components
            if kind and not any(c.kind == kind for c in comps):
                continue
            if collective and not any(collective in c.collectives and (not kind or c.kind == kind) for c in comps):
                continue
            hay = " ".join(
                [p.name, p.display_name or "", p.summary, *p.keywords]
                + [f"{c.id} {c.summary} {' '.join(c.collectives)}" for c in comps]
            ).lower()
            if all(w in hay for w in words):
                found.append(p)
        return found

    # -- resolution and install --------------------------------------------------------------
    @_hinted
    def resolve(self, requirement: str, *, hub_version: str | None = None) -> InstallPlan:
        """Pick the newest compatible, non-yanked version that satisfies ``requirement``."""
        try:
            req = Requirement(requirement)
        except InvalidRequirement as exc:
            raise UsageError(
                f"invalid requirement {requirement[:200]!r}: {' '.join(str(exc).split())[:200]}",
                hint="NAME or NAME<specifier>, e.g. collhub-mscclang>=0.1",
            ) from None
        doc = self.plugin(req.name)
        from .. import __version__
        from ..plugins import PLUGIN_API_VERSION

        try:
            current = Version(hub_version or __version__)
        except InvalidVersion:
            raise UsageError(f"invalid collhub version {hub_version!r}") from None
        api_major = int(PLUGIN_API_VERSION.split(".")[0])
        pinned = any(s.operator in ("==", "===") for s in req.specifier)
        reasons: list[str] = []
        candidates: list[tuple[Version, str, VersionEntry]] = []
        for text, entry in doc.versions.items():
            try:
                ver = Version(text)
            except InvalidVersion:
                continue
            if not req.specifier.contains(ver, prereleases=bool(req.specifier) and ver.is_prerelease):
                continue
            if entry.yanked and not pinned:
                reasons.append(f"{text} is yanked")
                continue
            try:  # the models validate both strings; this keeps a bypass a registry error too
                needs_hub = SpecifierSet(entry.requires_hub)
                entry_major = int(entry.api_version.split(".")[0])
            except (InvalidSpecifier, ValueError):
                raise RegistryFormatError(f"{doc.name} {text}: bad requires_hub or api_version") from None
            if entry.requires_hub and not needs_hub.contains(current, prereleases=True):
                reasons.append(f"{text} needs collhub{entry.requires_hub} (you have {current})")
                continue
            if entry_major > api_major:
                reasons.append(f"{text} needs plugin API {entry.api_version} (this collhub has {PLUGIN_API_VERSION})")
                continue
            candidates.append((ver, text, entry))
        if not candidates:
            detail = "; ".join(reasons) or f"no version matches {req.specifier or 'any'}"
            exc_type = IncompatiblePluginError if reasons else RegistryError
            raise exc_type(
                f"cannot install {requirement}: {detail}", hint="see: collhub plugins info " + doc.name + " --remote"
            )
        _, text, entry = max(candidates, key=lambda c: c[0])
        wheels = [f for f in entry.files if f.filename.endswith(".whl")]
        if not wheels:
            raise RegistryError(f"{doc.name} {text}: no wheel file in the index")
        rel = f"v1/plugins/{normalize_name(doc.name)}.json"
        try:
            url = urljoin(urljoin(self.base_url, rel), wheels[0].url)
        except ValueError:
            raise RegistryFormatError(f"{doc.name} {text}: bad file URL {wheels[0].url[:200]!r}") from None
        self._http.check_origin(url, f"{doc.name} {text}: file URL")
        if not wheels[0].hashes.get("sha256"):
            raise IntegrityError(f"{wheels[0].filename}: the index gives no sha256; refusing to install")
        return InstallPlan(doc.name, text, wheels[0], url, entry.requires_hub)

    @_hinted
    def download(self, plan: InstallPlan, dest: Path) -> Path:
        """Download one wheel into ``dest``, verifying size and sha256 before it is kept."""
        expected = plan.file.hashes.get("sha256")
        if not expected:
            raise IntegrityError(f"{plan.file.filename}: the index gives no sha256; refusing to install")
        if plan.file.size > self.max_download_bytes:
            raise IntegrityError(f"{plan.file.filename}: {plan.file.size} bytes exceeds the download limit")
        target = Path(dest) / plan.file.filename
        tmp = target.with_name(target.name + ".part")
        too_large = lambda: IntegrityError(  # noqa: E731
            f"{plan.file.filename}: download is larger than the {plan.file.size} bytes the index promises",
            hint="the file on the server differs from the one indexed; nothing was installed",
        )
        try:
            with tmp.open("w+b") as fh:
                resp = self._http.get(
                    plan.url,
                    {},
                    deadline=self._remaining(plan.url),
                    total=self.deadline,
                    limit=plan.file.size,
                    too_large=too_large,
                    sink=fh,
                )
                if resp.status != 200:
                    raise RegistryUnavailableError(f"{plan.url}: HTTP {resp.status}")
                fh.seek(0)
                digest = hashlib.sha256()
                size = 0
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        if size != plan.file.size:
            tmp.unlink(missing_ok=True)
            raise IntegrityError(f"{plan.file.filename}: got {size} bytes, the index says {plan.file.size}")
        if digest.hexdigest() != expected:
            tmp.unlink(missing_ok=True)
            raise IntegrityError(
                f"{plan.file.filename}: sha256 mismatch (got {digest.hexdigest()[:16]}…, index {expected[:16]}…)",
                hint="the file on the server differs from the one indexed; nothing was installed",
            )
        os.replace(tmp, target)
        return target

    def install(
        self,
        requirements: Iterable[str],
        *,
        upgrade: bool = False,
        dry_run: bool = False,
        python: str | None = None,
        force: bool = False,
        confirm: Callable[[str], bool] | None = None,
    ) -> list[InstallPlan]:
        """Resolve, download and verify every requirement, then install them all with pip.

        A plugin installed here in editable (development) mode is not replaced unless ``force``
        is set or ``confirm(question)`` says yes; without either a :class:`UsageError` refuses.
        """
        plans = [self.resolve(r) for r in requirements]
        if python is None and not force and not dry_run:
            _check_editable(plans, confirm)
        if dry_run or not plans:
            return plans
        with tempfile.TemporaryDirectory(prefix="collhub-install-") as tmp:
            wheels = [str(self.download(p, Path(tmp))) for p in plans]  # all verified before pip runs
            # ``python`` targets another environment through pip's --python option (pip >= 22.3).
            cmd = [
                sys.executable,
                "-m",
                "pip",
                *(["--python", python] if python else []),
                "install",
                "--disable-pip-version-check",
                "-q",
            ]
            if upgrade:
                cmd.append("--upgrade")
            proc = _run_pip([*cmd, *wheels], "install " + ", ".join(p.name for p in plans))
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            raise RegistryError("pip failed to install " + ", ".join(p.name for p in plans) + ": " + " | ".join(tail))
        return plans


def _check_editable(plans: list[InstallPlan], confirm: Callable[[str], bool] | None) -> None:
    from ._editable import editable_location

    dev = [(p, loc) for p in plans if (loc := editable_location(p.name)) is not None]
    if not dev:
        return
    what = ", ".join(f"{p.name} (editable from {loc})" for p, loc in dev)
    question = f"{what} is a development install; replace it with the registry's {dev[0][0].version}?"
    if confirm is not None and confirm(question):
        return
    raise UsageError(
        f"refusing to replace the development install of {what} with a registry wheel",
        hint="pass --force to replace it anyway (pip uninstall it first to keep the checkout untouched)",
    )


def uninstall(names: Iterable[str], *, python: str | None = None) -> None:
    names = list(names)
    for name in names:
        if not valid_name(name):
            raise UsageError(f"invalid plugin name {name!r}")
    proc = _run_pip(
        [sys.executable, "-m", "pip", *(["--python", python] if python else []), "uninstall", "-y", "-q", *names],
        "uninstall " + ", ".join(names),
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RegistryError("pip failed to uninstall " + ", ".join(names) + ": " + " | ".join(tail))


class _NotFound(RegistryError):
    """HTTP 404 for a registry document (turned into the user's words where the name is known)."""


def _check_depth(data: Any, url: str) -> None:
    """Refuse documents nested deeper than any documented one (iteratively: no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise RegistryFormatError(f"{url}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))


def _atomic_write(path: Path, data: bytes) -> None:
    from ..atomic import write_file

    write_file(path, data)
