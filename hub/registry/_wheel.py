"""Read a plugin wheel's metadata, entry points and manifest without importing or installing it.

A wheel is a zip archive; everything we need is text inside it:
``<dist>.dist-info/METADATA`` (core metadata), ``<dist>.dist-info/entry_points.txt`` and the
manifest file that the ``collhub.manifest`` entry point names (``package:collhub-plugin.toml``).
"""

from __future__ import annotations

import configparser
import email.parser
import hashlib
import re
import tomllib
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import ValidationError

from ..errors import RegistryFormatError
from ._models import Manifest, valid_filename, valid_name

__all__ = ["MANIFEST_FILE", "MANIFEST_GROUP", "PLUGIN_GROUP", "WheelInfo", "read_manifest_text", "read_wheel"]

PLUGIN_GROUP = "collhub"
MANIFEST_GROUP = "collhub.manifest"
MANIFEST_FILE = "collhub-plugin.toml"
_MAX_MEMBER = 4 * 1024 * 1024  # refuse absurdly large metadata members (zip bombs)
_MAX_MEMBERS = 100_000  # a wheel's member count (the central directory is read whole by zipfile)
# what a corrupt or hostile archive raises while a member is read: bad CRC and bad headers
# (BadZipFile), bad deflate data (zlib.error), a member shorter than it claims (EOFError), an
# unknown compression method (NotImplementedError), encryption (RuntimeError)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError, ValueError)
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class WheelInfo:
    path: Path
    filename: str
    name: str
    version: str
    summary: str
    requires_python: str
    requires_dist: tuple[str, ...]
    entry_points: dict[str, dict[str, str]]
    manifest: Manifest
    sha256: str
    size: int


def _flat(exc: BaseException, limit: int = 300) -> str:
    """An exception's text on one line (configparser and tomllib messages span several)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "…"


def _unsafe_member(name: str) -> str | None:
    """Why a member name could write outside the install target (or confuse tools), else None."""
    if not name or "\x00" in name or any(ord(c) < 32 for c in name):
        return "has control characters"
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path"
    if "\\" in name:
        return "contains a backslash"
    parts = name.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' path segment"
    return None


def _check_members(zf: zipfile.ZipFile, path: Path) -> None:
    infos = zf.infolist()
    if len(infos) > _MAX_MEMBERS:
        raise RegistryFormatError(f"{path.name}: {len(infos)} members, more than the limit of {_MAX_MEMBERS}")
    seen: set[str] = set()
    for info in infos:
        why = _unsafe_member(info.orig_filename)
        if why:
            raise RegistryFormatError(
                f"{path.name}: member {info.orig_filename[:200]!r} {why}",
                hint="a wheel's members are relative paths inside the archive",
            )
        if info.filename in seen:
            raise RegistryFormatError(f"{path.name}: member {info.filename[:200]!r} appears twice")
        seen.add(info.filename)


def _read_member(zf: zipfile.ZipFile, member: str, path: Path) -> str:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise RegistryFormatError(f"{path.name}: wheel has no {member}") from None
    if info.file_size > _MAX_MEMBER:
        raise RegistryFormatError(f"{path.name}: {member} is larger than {_MAX_MEMBER} bytes")
    try:
        with zf.open(info) as fh:
            # read at most one byte past the declared size: a member that inflates past what its
            # header says is refused without inflating the rest
            data = fh.read(_MAX_MEMBER + 1)
    except _ZIP_ERRORS as exc:
        raise RegistryFormatError(
            f"{path.name}: {member} is corrupt ({_flat(exc)})", hint="rebuild the wheel; the archive does not read back"
        ) from None
    if len(data) != info.file_size:
        raise RegistryFormatError(f"{path.name}: {member} is {len(data)} bytes, its header says {info.file_size}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegistryFormatError(f"{path.name}: {member} is not UTF-8 (byte {exc.start})") from None


def read_manifest_text(text: str, *, source: str) -> Manifest:
    """Parse and validate a ``collhub-plugin.toml`` text; errors name ``source`` and the field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryFormatError(f"{source}: invalid TOML: {_flat(exc)}") from None
    except RecursionError:
        raise RegistryFormatError(f"{source}: invalid TOML: nested too deeply") from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:5]
        )
        problems = " ".join(problems.split())
        raise RegistryFormatError(f"{source}: invalid manifest: {problems}") from None


def _sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def read_wheel(path: Path) -> WheelInfo:
    """Everything the registry needs from one wheel. Raises :class:`RegistryFormatError`."""
    path = Path(path)
    if not valid_filename(path.name):
        raise RegistryFormatError(f"{path.name}: not an acceptable wheel file name")
    try:
        zf = zipfile.ZipFile(path)
    except _ZIP_ERRORS as exc:
        raise RegistryFormatError(f"{path.name}: not a readable wheel ({_flat(exc)})") from None
    with zf:
        _check_members(zf, path)
        dist_infos = {n.split("/", 1)[0] for n in zf.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_infos) != 1:
            raise RegistryFormatError(f"{path.name}: expected exactly one .dist-info directory")
        dist_info = dist_infos.pop()
        meta = email.parser.Parser().parsestr(_read_member(zf, f"{dist_info}/METADATA", path))
        name = meta.get("Name", "")
        version = meta.get("Version", "")
        if not valid_name(name) or not version:
            raise RegistryFormatError(f"{path.name}: METADATA has an invalid Name/Version ({name!r}, {version!r})")
        try:
            Version(version)
        except InvalidVersion:
            raise RegistryFormatError(
                f"{path.name}: METADATA Version {version[:100]!r} is not a PEP 440 version"
            ) from None
        requires_python = meta.get("Requires-Python", "") or ""
        try:
            SpecifierSet(requires_python)
        except InvalidSpecifier:
            raise RegistryFormatError(
                f"{path.name}: METADATA Requires-Python {requires_python[:100]!r} is not a version specifier"
            ) from None
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
        try:
            parser.read_string(_read_member(zf, f"{dist_info}/entry_points.txt", path))
        except configparser.Error as exc:
            raise RegistryFormatError(f"{path.name}: bad entry_points.txt: {_flat(exc)}") from None
        entry_points = {section: dict(parser[section]) for section in parser.sections()}
        if not entry_points.get(PLUGIN_GROUP):
            raise RegistryFormatError(
                f"{path.name}: no entry point in group {PLUGIN_GROUP!r}",
                hint="a collhub plugin registers itself under [project.entry-points.collhub]",
            )
        manifests = entry_points.get(MANIFEST_GROUP, {})
        if len(manifests) != 1:
            raise RegistryFormatError(
                f"{path.name}: expected one entry point in group {MANIFEST_GROUP!r}, found {len(manifests)}",
                hint='add [project.entry-points."collhub.manifest"] <plugin> = "<package>" (with '
                "<package>/collhub-plugin.toml)",
            )
        # The value names the package holding the manifest ("pkg", file collhub-plugin.toml),
        # or "pkg:resource" for another file name.
        ref = next(iter(manifests.values())).strip()
        package, _, resource = ref.partition(":")
        resource = resource or MANIFEST_FILE
        if not package or not resource or ".." in resource or resource.startswith("/"):
            raise RegistryFormatError(f"{path.name}: bad manifest reference {ref!r}")
        member = "/".join(package.split(".")) + "/" + resource
        manifest = read_manifest_text(_read_member(zf, member, path), source=f"{path.name}:{member}")
    if manifest.name.lower().replace("_", "-") != name.lower().replace("_", "-"):
        raise RegistryFormatError(f"{path.name}: manifest name {manifest.name!r} differs from distribution {name!r}")
    if manifest.plugin not in entry_points[PLUGIN_GROUP]:
        raise RegistryFormatError(
            f"{path.name}: manifest plugin {manifest.plugin!r} is not an entry point in group {PLUGIN_GROUP!r}"
        )
    sha, size = _sha256(path)
    return WheelInfo(
        path=path,
        filename=path.name,
        name=name,
        version=version,
        summary=meta.get("Summary", "") or "",
        requires_python=requires_python,
        requires_dist=tuple(meta.get_all("Requires-Dist") or ()),
        entry_points=entry_points,
        manifest=manifest,
        sha256=sha,
        size=size,
    )
