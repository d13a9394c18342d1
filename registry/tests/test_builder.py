from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from collhub_registry import build_site
from hub.errors import RegistryFormatError, UsageError
from hub.registry import read_wheel
from tests.registry.wheels import build_wheel, write_plugin_project


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_index_lists_each_plugin_once_with_its_components(site: Path) -> None:
    index = _load(site / "v1" / "index.json")
    assert index["meta"]["api-version"] == "1.0"
    by_name = {p["name"]: p for p in index["plugins"]}
    assert set(by_name) == {"collhub-other", "collhub-sample"}
    sample = by_name["collhub-sample"]
    assert sample["latest"] == "1.2.0"
    assert sample["lifecycle"] == "beta"
    assert sample["components"] == [
        {
            "id": "sample.pairs",
            "kind": "producer",
            "summary": "Pairwise exchange all-to-all",
            "collectives": ["alltoall"],
        }
    ]


def test_plugin_file_has_every_version_and_hashes(site: Path, wheels: dict[str, Path]) -> None:
    import hashlib

    doc = _load(site / "v1" / "plugins" / "collhub-other.json")
    assert set(doc["versions"]) == {"0.3.0", "0.4.0"}
    assert doc["latest"] == "0.4.0"
    assert doc["versions"]["0.4.0"]["requires_hub"] == ">=99"
    (entry,) = doc["versions"]["0.3.0"]["files"]
    raw = wheels["other"].read_bytes()
    assert entry["hashes"]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert entry["size"] == len(raw)
    assert (site / "v1" / "plugins" / entry["url"]).resolve() == (site / "files" / entry["filename"]).resolve()


def test_reverse_index_and_errors(site: Path) -> None:
    comps = _load(site / "v1" / "components.json")
    assert comps["by_id"]["sample.pairs"] == ["collhub-sample"]
    assert comps["by_collective"]["alltoall"] == ["collhub-sample"]
    assert comps["by_collective"]["allgather"] == ["collhub-other"]
    assert comps["by_kind"]["consumer"] == ["collhub-other"]
    errors = _load(site / "v1" / "errors.json")["errors"]
    assert len(errors) == 1 and errors[0]["file"].startswith("collhub_bare")
    assert "collhub.manifest" in errors[0]["error"]


def test_manifest_with_unknown_keys_is_rejected_without_running_code(tmp_path: Path) -> None:
    project = write_plugin_project(
        tmp_path, dist="collhub-extra", plugin="extra", version="1.0", manifest_extra='colour = "red"'
    )
    # If the builder imported the plugin, this would raise at import time.
    (project / "collhub_extra" / "plugin.py").write_text("raise SystemExit('plugin code must never run')\n")
    (project / "collhub_extra" / "__init__.py").write_text("raise SystemExit('plugin code must never run')\n")
    wheel = build_wheel(project, tmp_path)
    with pytest.raises(RegistryFormatError, match="colour"):
        read_wheel(wheel)
    report = build_site([wheel], tmp_path / "site")
    assert report.plugins == {}
    assert "colour" in report.errors[0].error


def test_odd_names_are_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "..evil-1.0-py3-none-any.whl"
    bad.write_bytes(b"PK")
    with pytest.raises(RegistryFormatError, match="file name"):
        read_wheel(bad)
    # A wheel whose METADATA name tries path traversal.
    wheel = tmp_path / "trav-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("trav-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: ../../etc\nVersion: 1.0\n")
        zf.writestr("trav-1.0.dist-info/entry_points.txt", "[collhub]\nx = y\n")
    with pytest.raises(RegistryFormatError, match="invalid Name"):
        read_wheel(wheel)


def test_no_wheels_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        build_site([], tmp_path / "site")


def test_rebuild_replaces_site_atomically(site: Path, wheels: dict[str, Path]) -> None:
    from hub.errors import UsageError

    with pytest.raises(UsageError, match="a registry site is already there") as info:
        build_site([wheels["sample"]], site)  # a served site is never swapped away unasked
    assert "--force" in (info.value.hint or "")
    assert (site / "v1" / "plugins" / "collhub-other.json").exists()
    report = build_site([wheels["sample"]], site, force=True)
    assert set(report.plugins) == {"collhub-sample"}
    assert not (site / "v1" / "plugins" / "collhub-other.json").exists()
    assert not list(site.parent.glob(".site.*"))
