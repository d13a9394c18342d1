"""``collhub registry build`` on hostile wheels: each is rewritten from a real pip-built wheel with
one thing broken (archive, member names, text encodings, manifest, metadata). Each must be a
:class:`RegistryFormatError` naming the file; a build over all of them plus the good wheel keeps
the good one and lists every bad one in ``errors.json``."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from hub.errors import RegistryFormatError
from hub.registry import read_wheel
from tests.registry.hostile_cli import assert_clean, run_batch, run_many
from tests.registry.wheels import write_plugin_project

Members = list[tuple[str, bytes]]
_MANIFEST = "collhub_sample/collhub-plugin.toml"


def _members(good: Path) -> Members:
    with zipfile.ZipFile(good) as zf:
        return [(i.filename, zf.read(i)) for i in zf.infolist()]


def _dist_info(members: Members) -> str:
    return next(n.split("/")[0] for n, _ in members if n.split("/")[0].endswith(".dist-info"))


def _write(path: Path, members: Members, method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": one case wants exactly that
        for name, data in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            zf.writestr(info, data)
    return path


def _replace(members: Members, suffix: str, fn: Callable[[bytes], bytes]) -> Members:
    return [(n, fn(d) if n.endswith(suffix) else d) for n, d in members]


def _patch_sizes(
    path: Path,
    member: str,
    *,
    delta: int = 0,
    size: int | None = None,
    method: int | None = None,
    flags: int | None = None,
) -> None:
    """Edit a member's central-directory and local-header fields in place (zipfile cannot lie)."""
    raw = bytearray(path.read_bytes())
    name = member.encode()
    for sig, size_off, method_off, flag_off, name_off in (
        (b"PK\x01\x02", 24, 10, 8, 46),
        (b"PK\x03\x04", 22, 8, 6, 30),
    ):
        pos = raw.find(sig)
        while pos >= 0:
            if raw[pos + name_off : pos + name_off + len(name)] == name:
                old = struct.unpack_from("<I", raw, pos + size_off)[0]
                struct.pack_into("<I", raw, pos + size_off, size if size is not None else old + delta)
                if method is not None:
                    struct.pack_into("<H", raw, pos + method_off, method)
                if flags is not None:
                    struct.pack_into("<H", raw, pos + flag_off, flags)
            pos = raw.find(sig, pos + 4)
    path.write_bytes(bytes(raw))


def _corrupt_data(path: Path, member: str) -> None:
    """Flip bytes inside a member's (compressed) data: a CRC error, or bad deflate data."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for k in range(start + 2, start + min(info.compress_size, 40) - 2):
        raw[k] ^= 0x5A
    path.write_bytes(bytes(raw))


def _make_cases(good: Path, out: Path) -> dict[str, Path]:
    """Every hostile wheel, by case name. File names stay valid so the content is what fails."""
    base = _members(good)
    di = _dist_info(base)
    cases: dict[str, Path] = {}

    def wheel(case: str, members: Members, method: int = zipfile.ZIP_DEFLATED) -> Path:
        path = out / f"collhub_{case.replace('-', '_')}-1.0-py3-none-any.whl"
        cases[case] = _write(path, members, method)
        return path

    # -- the archive --
    _corrupt_data(wheel("crc-stored-metadata", base, zipfile.ZIP_STORED), f"{di}/METADATA")
    _corrupt_data(wheel("deflate-garbage-metadata", base), f"{di}/METADATA")
    _corrupt_data(wheel("deflate-garbage-manifest", base), _MANIFEST)
    _patch_sizes(wheel("size-lies-small", base), f"{di}/METADATA", delta=-7)
    _patch_sizes(wheel("size-lies-large", base), f"{di}/METADATA", delta=+7)
    _patch_sizes(wheel("size-lies-stored", base, zipfile.ZIP_STORED), f"{di}/entry_points.txt", delta=+100)
    _patch_sizes(wheel("size-claims-4gib", base), f"{di}/METADATA", size=0xFFFFFFF0)
    bomb = _replace(base, "/METADATA", lambda d: d + b"\n" + b"X" * (16 << 20))
    wheel("metadata-bomb-16mib", bomb)
    _patch_sizes(wheel("method-unknown", base), f"{di}/METADATA", method=99)
    _patch_sizes(wheel("encrypted-flag", base), f"{di}/METADATA", flags=0x1)
    truncated = wheel("truncated-half", base)
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    (out / "collhub_empty-1.0-py3-none-any.whl").write_bytes(b"")
    cases["empty-file"] = out / "collhub_empty-1.0-py3-none-any.whl"
    (out / "collhub_text-1.0-py3-none-any.whl").write_text("this is not a zip\n")
    cases["not-a-zip"] = out / "collhub_text-1.0-py3-none-any.whl"
    # -- member names --
    for case, name in [
        ("member-dotdot", "../evil.py"),
        ("member-absolute", "/tmp/evil.py"),
        ("member-inner-dotdot", "collhub_sample/../../evil.py"),
        ("member-drive", "C:/evil.py"),
        ("member-backslash", "collhub_sample\\..\\..\\evil.py"),
        ("member-control", "collhub_sample/\x01x"),
        ("member-dot-segment", "./collhub_sample/x.py"),
        ("member-empty-segment", "collhub_sample//x.py"),
        ("member-newline", "collhub_sample/a\nb.py"),
    ]:
        wheel(case, base + [(name, b"print('never extracted')\n")])
    wheel("member-duplicate", base + [(f"{di}/METADATA", b"Metadata-Version: 2.1\nName: other\nVersion: 9\n")])
    # -- text encodings --
    wheel("metadata-not-utf8", _replace(base, "/METADATA", lambda d: d.replace(b"Summary:", b"Summary: \xff\xfe")))
    wheel("entry-points-not-utf8", _replace(base, "/entry_points.txt", lambda d: d + b"\n# \xc3\x28\n"))
    wheel("manifest-not-utf8", _replace(base, "collhub-plugin.toml", lambda d: d + b"\n# \xe9t\xe9\n"))
    wheel("manifest-utf16", _replace(base, "collhub-plugin.toml", lambda d: d.decode().encode("utf-16")))
    # -- entry points and manifest --
    wheel("entry-points-no-section", _replace(base, "/entry_points.txt", lambda d: b"x = y\n" + d))
    wheel("entry-points-duplicate-section", _replace(base, "/entry_points.txt", lambda d: d + b"\n[collhub]\nz = q\n"))
    wheel("manifest-bad-toml", _replace(base, "collhub-plugin.toml", lambda d: d + b"\n= = =\n"))
    wheel(
        "manifest-deep-arrays",
        _replace(base, "collhub-plugin.toml", lambda d: d + b"\nx = " + b"[" * 5000 + b"]" * 5000),
    )
    wheel(
        "manifest-requires-hub-junk",
        _replace(base, "collhub-plugin.toml", lambda d: _set_key(d, b"requires_hub", b'"not a spec"')),
    )
    wheel(
        "manifest-requires-hub-int", _replace(base, "collhub-plugin.toml", lambda d: _set_key(d, b"requires_hub", b"3"))
    )
    wheel(
        "manifest-requires-hub-double-op",
        _replace(base, "collhub-plugin.toml", lambda d: _set_key(d, b"requires_hub", b'">=>=0.1"')),
    )
    wheel(
        "manifest-api-version-words",
        _replace(base, "collhub-plugin.toml", lambda d: _set_key(d, b"api_version", b'"one.two"')),
    )
    wheel("manifest-missing", [(n, d) for n, d in base if not n.endswith("collhub-plugin.toml")])
    wheel(
        "manifest-ref-traversal",
        _replace(
            base,
            "/entry_points.txt",
            lambda d: d.replace(b"= collhub_sample\n", b"= collhub_sample:../../etc/passwd\n"),
        ),
    )
    # -- metadata --
    wheel("version-not-pep440", _replace(base, "/METADATA", lambda d: d.replace(b"Version: 1.2.0", b"Version: one!!")))
    wheel(
        "requires-python-junk",
        _replace(base, "/METADATA", lambda d: d.replace(b"Requires-Python: >=3.11", b"Requires-Python: python3")),
    )
    wheel("name-traversal", _replace(base, "/METADATA", lambda d: d.replace(b"Name: collhub-sample", b"Name: ../../x")))
    wheel("no-dist-info", [(n, d) for n, d in base if ".dist-info/" not in n])
    wheel("two-dist-infos", base + [("other-1.0.dist-info/METADATA", b"Name: other\nVersion: 1.0\n")])
    return cases


def _set_key(toml: bytes, key: bytes, value: bytes) -> bytes:
    lines = [ln for ln in toml.split(b"\n") if not ln.startswith(key + b" ")]
    return key + b" = " + value + b"\n" + b"\n".join(lines)


@pytest.fixture(scope="module")
def hostile_wheels(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("hostile-wheels")
    cases = _make_cases(wheels["sample"], out)
    # the rewrite itself is sound: the unbroken members, rewritten the same way, still index
    control = _write(out / "collhub_sample-1.2.0-py3-none-any.whl", _members(wheels["sample"]))
    assert read_wheel(control).name == "collhub-sample"
    return cases


CASE_NAMES = [
    "crc-stored-metadata",
    "deflate-garbage-metadata",
    "deflate-garbage-manifest",
    "size-lies-small",
    "size-lies-large",
    "size-lies-stored",
    "size-claims-4gib",
    "metadata-bomb-16mib",
    "method-unknown",
    "encrypted-flag",
    "truncated-half",
    "empty-file",
    "not-a-zip",
    "member-dotdot",
    "member-absolute",
    "member-inner-dotdot",
    "member-drive",
    "member-backslash",
    "member-control",
    "member-dot-segment",
    "member-empty-segment",
    "member-newline",
    "member-duplicate",
    "metadata-not-utf8",
    "entry-points-not-utf8",
    "manifest-not-utf8",
    "manifest-utf16",
    "entry-points-no-section",
    "entry-points-duplicate-section",
    "manifest-bad-toml",
    "manifest-deep-arrays",
    "manifest-requires-hub-junk",
    "manifest-requires-hub-int",
    "manifest-requires-hub-double-op",
    "manifest-api-version-words",
    "manifest-missing",
    "manifest-ref-traversal",
    "version-not-pep440",
    "requires-python-junk",
    "name-traversal",
    "no-dist-info",
    "two-dist-infos",
]


def test_case_list_is_complete(hostile_wheels: dict[str, Path]) -> None:
    assert sorted(hostile_wheels) == sorted(CASE_NAMES)


@pytest.mark.parametrize("case", CASE_NAMES)
def test_each_hostile_wheel_is_a_format_error(hostile_wheels: dict[str, Path], case: str) -> None:
    path = hostile_wheels[case]
    with pytest.raises(RegistryFormatError) as info:
        read_wheel(path)
    assert info.value.message.startswith(path.name), info.value.message
    assert "\n" not in info.value.message


def test_build_keeps_good_wheels_and_reports_each_bad_one(
    tmp_path: Path, hostile_wheels: dict[str, Path], wheels: dict[str, Path]
) -> None:
    site = tmp_path / "site"
    args = [
        "registry",
        "build",
        str(wheels["sample"]),
        *map(str, hostile_wheels.values()),
        "--out",
        str(site),
        "--format",
        "json",
    ]
    (ran,) = run_many([(args, {"TMPDIR": str(tmp_path)})])
    assert ran.rc == 3, ran.stderr[-3000:]  # the good one is indexed, but skipping one is a failure
    assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr
    assert json.loads(ran.stdout)["plugins"] == {"collhub-sample": ["1.2.0"]}
    errors = json.loads((site / "v1" / "errors.json").read_text())["errors"]
    assert sorted(e["file"] for e in errors) == sorted(p.name for p in hostile_wheels.values())
    assert sorted(os.listdir(site / "files")) == [wheels["sample"].name]  # no bad wheel is published
    skipped = [ln for ln in ran.stderr.splitlines() if ln.startswith("error: skipped ")]
    assert len(skipped) == len(hostile_wheels)
    assert all(f"({p.name}" in "\n".join(skipped) for p in hostile_wheels.values())  # each named, with why


def test_local_directory_is_always_a_path(tmp_path: Path) -> None:
    """`registry build six` with a local project directory named ``six`` builds THAT project
    (no index is asked: pip runs with --no-index)."""
    project = write_plugin_project(tmp_path / "src", dist="collhub-six", plugin="six", version="0.1.0")
    local = tmp_path / "six"
    project.rename(local)
    proc = subprocess.run(
        [sys.executable, "-m", "hub.cli", "registry", "build", "six", "--out", "site", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["plugins"] == {"collhub-six": ["0.1.0"]}


def test_build_argument_errors_are_clean(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("user data\n")
    (tmp_path / "emptydir").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("keep me\n")
    os.mkfifo(tmp_path / "fifo")
    whl = tmp_path / "x-1.0-py3-none-any.whl"
    whl.write_bytes(b"PK")
    cases = [
        ["registry", "build", str(tmp_path / "missing"), "--out", str(tmp_path / "s1")],
        ["registry", "build", str(tmp_path / "emptydir"), "--out", str(tmp_path / "s2")],
        ["registry", "build", str(tmp_path / "fifo"), "--out", str(tmp_path / "s3")],
        ["registry", "build", str(whl), "--out", str(tmp_path / "afile")],
        ["registry", "build", str(whl), "--out", str(tmp_path / "full")],
    ]
    for ran in run_batch([(c, {}) for c in cases], jobs=1):
        assert_clean(ran, 2)
    assert (tmp_path / "afile").read_text() == "user data\n"
    assert (tmp_path / "full" / "keep.txt").read_text() == "keep me\n"
