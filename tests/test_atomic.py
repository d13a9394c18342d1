"""hub.atomic: outputs are whole or absent, with the modes open()/mkdir give, never over a user's file.

Every artifact writer (ET sets, JSON views, MSCCL-IR XML, simulate trace and PNG, network.yml,
ASTRA-sim bundles, run directories) goes through the helper; each is checked here under the
usual umask 022: files 0644, directories 0755.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub.algorithms import ring
from hub.atomic import commit_dir, output_path, temp_dir, write_file, write_files
from hub.chakra import read_algorithm, write_algorithm
from hub.errors import UsageError


@pytest.fixture(autouse=True)
def umask022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def _modes_under(d: Path) -> dict[str, int]:
    return {str(p.relative_to(d)): _mode(p) for p in [d, *d.rglob("*")]}


def test_write_file_and_set_modes(tmp_path: Path) -> None:
    assert _mode(write_file(tmp_path / "a.txt", "x")) == 0o644
    paths = write_files([(tmp_path / "b", [b"1", memoryview(b"2")]), (tmp_path / "sub" / "c", b"3")])
    assert [p.read_bytes() for p in paths] == [b"12", b"3"]
    assert {_mode(p) for p in paths} == {0o644}
    os.umask(0o077)
    assert _mode(write_file(tmp_path / "private", b"")) == 0o600  # the umask is honoured, not overridden


def test_check_vetoes_and_nothing_is_left(tmp_path: Path) -> None:
    def veto(tmp: Path) -> None:
        assert tmp.read_bytes() == b"data"
        raise ValueError("no")

    with pytest.raises(ValueError):
        write_file(tmp_path / "x", b"data", check=veto)
    assert list(tmp_path.iterdir()) == []


def test_stale_members_go_in_the_same_step(tmp_path: Path) -> None:
    write_algorithm(ring("allreduce", 8), tmp_path / "r")
    (tmp_path / "r.notes").write_text("kept")
    (tmp_path / "rr.9.et").write_text("another prefix: kept")
    write_algorithm(ring("allreduce", 4), tmp_path / "r")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.0.et", "r.1.et", "r.2.et", "r.3.et", "r.notes", "rr.9.et"]
    assert read_algorithm(tmp_path / "r").ranks == 4


@pytest.mark.parametrize("prefix", ["", "out/", ".", "a/.."])
def test_empty_prefix_is_refused(tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="names no file"):
        write_algorithm(ring("allreduce", 2), prefix)
    assert list(tmp_path.iterdir()) == []


def test_output_path_for_tools_writing_by_name(tmp_path: Path) -> None:
    with output_path(tmp_path / "plot.png") as tmp:
        tmp.unlink()
        tmp.write_bytes(b"png")  # a tool re-creating the file
        os.chmod(tmp, 0o600)
    assert (tmp_path / "plot.png").read_bytes() == b"png" and _mode(tmp_path / "plot.png") == 0o644
    with pytest.raises(RuntimeError):
        with output_path(tmp_path / "other.png") as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]


def test_directories(tmp_path: Path) -> None:
    final = tmp_path / "bundle"
    tmp = temp_dir(final)
    assert _mode(tmp) == 0o755
    (tmp / "f").write_text("1")
    commit_dir(tmp, final)
    assert (final / "f").read_text() == "1" and _mode(final) == 0o755
    tmp2 = temp_dir(final)
    with pytest.raises(UsageError, match="already exists"):
        commit_dir(tmp2, final)
    commit_dir(tmp2, final, replace=True)
    assert list(final.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]


def test_a_file_is_never_moved_aside(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.write_text("precious")
    with pytest.raises(UsageError, match="not a directory"):
        temp_dir(mine)
    tmp = temp_dir(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="not a directory"):
        commit_dir(tmp, mine, replace=True)
    assert mine.read_text() == "precious"
    with pytest.raises(UsageError, match="is a directory"):
        write_file(tmp_path / "elsewhere" if (tmp_path / "elsewhere").exists() else tmp, "x")


def test_run_directory_force_onto_a_file(tmp_path: Path) -> None:
    from hub.pipeline._record.rundir import RunDir

    mine = tmp_path / "results"
    mine.write_text("precious")
    with pytest.raises(UsageError, match="not a directory"):
        RunDir(mine, force=True)
    assert mine.read_text() == "precious" and sorted(p.name for p in tmp_path.iterdir()) == ["results"]


# -- every artifact writer ----------------------------------------------------------------------
def test_et_and_json_views(tmp_path: Path) -> None:
    from hub.chakra import algorithm_to_json

    files = write_algorithm(ring("allreduce", 4).bind(4096), tmp_path / "r")
    assert {_mode(p) for p in files} == {0o644}
    write_file(tmp_path / "r.json", str(algorithm_to_json(read_algorithm(tmp_path / "r"))))
    assert _mode(tmp_path / "r.json") == 0o644


def test_simulate_trace_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from hub.sim import simulate
    from hub.sim._views.trace import write_plot, write_trace

    res = simulate(ring("allreduce", 4).bind(1 << 16), "ring:4")
    assert _mode(write_trace(res, tmp_path / "t.json")) == 0o644
    assert _mode(write_plot(res, tmp_path / "p.png")) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.png", "t.json"]


def test_network_yml(tmp_path: Path) -> None:
    from hub.topology import load_topology

    path = load_topology("ring:4").write_network_yml(tmp_path / "network.yml")
    assert _mode(path) == 0o644


def test_msccl_export(tmp_path: Path) -> None:
    mscclang = pytest.importorskip("collhub_mscclang")
    mscclang.write_msccl_ir(ring("allreduce", 4), tmp_path / "a.xml")
    assert _mode(tmp_path / "a.xml") == 0o644 and sorted(p.name for p in tmp_path.iterdir()) == ["a.xml"]


def test_astrasim_bundle(tmp_path: Path) -> None:
    astrasim = pytest.importorskip("collhub_astrasim")
    b = astrasim.build_bundle(
        ring("allreduce", 4), out=tmp_path / "b", dims=[astrasim.Dim("Ring", 4, 50, 500)], size=1 << 16, predict=False
    )
    modes = _modes_under(b.path)
    assert modes.pop(".") == 0o755 and modes.pop("algorithm") == 0o755 and modes.pop("workload") == 0o755
    assert modes.pop("run.sh") == 0o755
    assert set(modes.values()) == {0o644}, modes


# --- unusable output places (issue 26) ---------------------------------------------------------
def test_unusable_places_are_one_clean_error(tmp_path: Path) -> None:
    from hub.atomic import make_dirs, output_path, temp_dir, write_file
    from hub.errors import UsageError

    (tmp_path / "afile").write_text("mine\n")
    for target in (tmp_path / "afile" / "x", tmp_path / "afile" / "x" / "y", Path("/proc/collhub-x/y")):
        with pytest.raises(UsageError, match="cannot write") as info:
            write_file(target, b"data")
        assert str(target).split("/x")[0] in info.value.message or "/proc" in info.value.message
        with pytest.raises(UsageError):
            temp_dir(target)
        with pytest.raises(UsageError):
            with output_path(target):
                pass
    with pytest.raises(UsageError, match="is a file, not a directory"):
        make_dirs(tmp_path / "afile")
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_a_full_disk_is_an_output_error_not_a_usage_error(tmp_path: Path) -> None:
    import errno

    from hub.atomic import output_error
    from hub.errors import OutputError, UsageError

    full = output_error(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x")), tmp_path / "x")
    assert isinstance(full, OutputError) and full.exit_code == 1 and str(tmp_path / "x") in full.message
    denied = output_error(OSError(errno.EACCES, "Permission denied", str(tmp_path)), tmp_path / "x")
    assert isinstance(denied, UsageError) and denied.exit_code == 2


def test_staged_dir_is_whole_or_nothing(tmp_path: Path) -> None:
    """staged_dir: the directory appears whole when the body ends, and a body that raises
    leaves neither the directory nor its temporary sibling behind."""
    from hub.atomic import staged_dir

    final = tmp_path / "out"
    with pytest.raises(RuntimeError), staged_dir(final) as tmp:
        (tmp / "a.txt").write_text("half")
        raise RuntimeError("stop")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with staged_dir(final) as tmp:
        (tmp / "a.txt").write_text("whole")
        assert not final.exists()
    assert (final / "a.txt").read_text() == "whole" and [p.name for p in tmp_path.iterdir()] == ["out"]
    with pytest.raises(UsageError), staged_dir(final) as tmp:  # replace not allowed: refused, debris removed
        (tmp / "b.txt").write_text("new")
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not (final / "b.txt").exists()
