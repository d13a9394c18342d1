"""The entry-point index (hub.plugins._index): the same rows as importlib.metadata, a cache that an
install, an uninstall or an edit invalidates, and real ``pip install`` / ``pip uninstall`` runs in a
fresh virtual environment showing up in ``collhub plugins list`` and ``collhub produce`` at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from hub.plugins import _index

from ..registry.wheels import build_wheel, write_plugin_project

REPO = Path(__file__).resolve().parents[2]


def _fixture_dist(root: Path, dist: str, entries: str, version: str = "1.0") -> Path:
    """A distribution as pip lays it out: ``<pkg>-<version>.dist-info`` with its entry points."""
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entries)
    return info


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLLHUB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(_index.ENV_NO_CACHE, raising=False)
    return tmp_path / "cache"


def test_rows_are_what_importlib_metadata_reports(cache: Path) -> None:
    rows, _ = _index.entry_rows("collhub")
    reference = [(ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in entry_points(group="collhub")]
    assert [(r.name, r.value, r.dist, r.version) for r in rows] == reference
    assert any(r.name == "hub" and r.value == "hub.plugins._builtin" for r in rows)
    # and the second call answers from the file the first one wrote
    assert list(cache.glob("entry-points-v1-*.json"))
    assert _index.entry_rows("collhub")[0] == rows


def test_a_cached_answer_is_not_rescanned(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = _index.entry_rows("collhub")

    def no_scan(group: str) -> list[_index.EntryRow]:
        raise AssertionError("scanned although nothing changed")

    monkeypatch.setattr(_index, "_scan", no_scan)
    assert _index.entry_rows("collhub")[0] == first


def test_a_new_changed_or_removed_distribution_changes_the_stamp(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    names = lambda: {r.name for r in _index.entry_rows("collhub")[0]}  # noqa: E731
    assert "idx_one" not in names()
    info = _fixture_dist(site, "collhub-idx-one", "[collhub]\nidx_one = idx_one.plugin\n")
    assert "idx_one" in names()
    # rewritten in place (same directory, same name): the file's own stamp changes
    (info / "entry_points.txt").write_text("[collhub]\nidx_two = idx_one.plugin\n")
    assert "idx_one" not in names() and "idx_two" in names()
    for f in info.iterdir():
        f.unlink()
    info.rmdir()
    assert not {"idx_one", "idx_two"} & names()


def test_another_distribution_finder_disables_the_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        @staticmethod
        def find_spec(*args: object) -> None:
            return None

        @staticmethod
        def find_distributions(*args: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert not _index._cacheable()
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f is not Finder])
    monkeypatch.setenv(_index.ENV_NO_CACHE, "1")
    assert not _index._cacheable()


@pytest.mark.parametrize("value", ["hub.plugins._builtin", "hub.plugins:_builtin", "hub.plugins._spec:RunContext"])
def test_load_value_is_entry_point_load(value: str) -> None:
    assert _index.load_value(value) is EntryPoint("x", value, "collhub").load()


def test_an_unwritable_cache_only_costs_a_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("COLLHUB_CACHE_DIR", str(blocker / "cache"))  # a directory under a file
    rows, _ = _index.entry_rows("collhub")
    assert any(r.name == "hub" for r in rows)


# --------------------------------------------------------------------------- real pip, real venv
def _venv(tmp_path: Path) -> Path:
    """A fresh virtual environment that sees this one's packages (collhub and its dependencies)
    through a .pth: plugins pip installs into it land in its own site-packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    # addsitedir (not a bare path line) so that the outer editable installs' .pth files work too
    Path(purelib, "outer.pth").write_text(f"import site; site.addsitedir({outer!r})\n")
    return python


def _run(python: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLHUB_")}
    env.update(COLLHUB_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    return subprocess.run([str(python), *args], capture_output=True, text=True, env=env, timeout=180, cwd=cache.parent)


def _listed(python: Path, cache: Path) -> dict[str, str]:
    p = _run(python, "-m", "hub.cli", "plugins", "list", "--format", "json", cache=cache)
    assert p.returncode == 0, p.stderr
    return {x["name"]: x["version"] for x in json.loads(p.stdout)["plugins"]}


_REGISTRATION = """from hub.plugins import ProducerSpec, hookimpl


@hookimpl
def collhub_producers():
    return [ProducerSpec(name="pairs", summary="Pairwise", factory="collhub_idx.plugin:produce")]


def produce(params, ctx):
    raise RuntimeError("VERSION {version} ran")
"""


def _wheel(src: Path, out: Path, version: str) -> Path:
    project = write_plugin_project(src, dist="collhub-idx", plugin="idx", version=version)
    (project / "collhub_idx" / "plugin.py").write_text(_REGISTRATION.format(version=version))
    return build_wheel(project, out)


def test_pip_install_upgrade_and_uninstall_show_at_once(tmp_path: Path) -> None:
    python = _venv(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    old, new = _wheel(tmp_path / "src", wheels, "1.0"), _wheel(tmp_path / "src", wheels, "2.0")

    def produce() -> str:
        p = _run(python, "-m", "hub.cli", "produce", "idx.pairs", "--out", str(tmp_path / "o"), cache=cache)
        assert p.returncode == 4, p.stderr  # unknown component, or the plugin's own error: both exit 4
        return p.stderr

    def pip(*args: str) -> None:
        cmd = [str(python), "-m", "pip", "-q", "--disable-pip-version-check", *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]

    assert "idx" not in _listed(python, cache)
    assert "unknown component 'idx.pairs'" in produce()
    assert list(cache.glob("entry-points-v1-*.json")), "the index was not written"

    pip("install", "--no-deps", "--no-index", str(old))
    assert _listed(python, cache).get("idx") == "1.0"
    assert "VERSION 1.0 ran" in produce()  # the manager in the collhub process itself sees it too

    pip("install", "--no-deps", "--no-index", "--upgrade", str(new))
    assert _listed(python, cache).get("idx") == "2.0"
    assert "VERSION 2.0 ran" in produce()

    pip("uninstall", "-y", "collhub-idx")
    assert "idx" not in _listed(python, cache)
    assert "unknown component 'idx.pairs'" in produce()


def test_the_importlib_metadata_backport_keeps_the_cache(cache: Path) -> None:
    # importing dask puts importlib_metadata's MetadataPathFinder on sys.meta_path; it reads the
    # same sys.path directories, so the index must still answer from its cache
    importlib_metadata = pytest.importorskip("importlib_metadata")
    finder = importlib_metadata.MetadataPathFinder()
    sys.meta_path.append(finder)
    try:
        _index.entry_rows("collhub")
        assert list(cache.glob("entry-points-v1-*.json"))
    finally:
        sys.meta_path.remove(finder)
