"""Read a plugin wheel's metadata, entry points and manifest without importing or installing it.

A wheel is a zip archive; everything we need is text inside it:
``<dist>.dist-info/METADATA`` (core metadata), ``<dist>.dist-info/entry_points.txt`` and the
manifest file that the ``collhub.manifest`` entry point names (``package:collhub-plugin.toml``).
"""

from __future__ import annotations

import configparser
import email.parser
import hashlib
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..errors import RegistryFormatError
from ._models import Manifest, valid_filename, valid_name

__all__ = ["MANIFEST_FILE", "MANIFEST_GROUP", "PLUGIN_GROUP", "WheelInfo", "read_manifest_text", "read_wheel"]

PLUGIN_GROUP = "collhub"
MANIFEST_GROUP = "collhub.manifest"
MANIFEST_FILE = "collhub-plugin.toml"
_MAX_MEMBER = 4 * 1024 * 1024  # refuse absurdly large metadata members (zip bombs)


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


def _read_member(zf: zipfile.ZipFile, member: str, path: Path) -> str:
    try:
        info = zf.getinfo(member)
    except KeyError:
        raise RegistryFormatError(f"{path.name}: wheel has no {member}") from None
    if info.file_size > _MAX_MEMBER:
        raise RegistryFormatError(f"{path.name}: {member} is larger than {_MAX_MEMBER} bytes")
    return zf.read(member).decode("utf-8")


def read_manifest_text(text: str, *, source: str) -> Manifest:
    """Parse and validate a ``collhub-plugin.toml`` text; errors name ``source`` and the field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryFormatError(f"{source}: invalid TOML: {exc}") from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
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
    except (zipfile.BadZipFile, OSError) as exc:
        raise RegistryFormatError(f"{path.name}: not a readable wheel ({exc})") from None
    with zf:
        dist_infos = {n.split("/", 1)[0] for n in zf.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_infos) != 1:
            raise RegistryFormatError(f"{path.name}: expected exactly one .dist-info directory")
        dist_info = dist_infos.pop()
        meta = email.parser.Parser().parsestr(_read_member(zf, f"{dist_info}/METADATA", path))
        name = meta.get("Name", "")
        version = meta.get("Version", "")
        if not valid_name(name) or not version:
            raise RegistryFormatError(f"{path.name}: METADATA has an invalid Name/Version ({name!r}, {version!r})")
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
        try:
            parser.read_string(_read_member(zf, f"{dist_info}/entry_points.txt", path))
        except configparser.Error as exc:
            raise RegistryFormatError(f"{path.name}: bad entry_points.txt: {exc}") from None
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
                hint='add [project.entry-points."collhub.manifest"] <plugin> = "<package>" (with <package>/collhub-plugin.toml)',
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
        requires_python=meta.get("Requires-Python", "") or "",
        requires_dist=tuple(meta.get_all("Requires-Dist") or ()),
        entry_points=entry_points,
        manifest=manifest,
        sha256=sha,
        size=size,
    )
