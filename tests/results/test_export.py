"""`collhub report RUN --export msccl DIR`: the winners as MSCCL-IR files plus their environment.

Every exported file is read back by the real importer (`mscclang.ir`) and proven by hub.verify;
its minBytes/maxBytes (read from the XML, not from the report) must tile the studied range, and
its winner must be the one recomputed from the rows (test_report._expected).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .test_report import _collhub, _expected

pytest.importorskip("collhub_mscclang")


def _ranges(algo_dir: Path) -> list[tuple[int, int, str]]:
    out = []
    for f in sorted(algo_dir.iterdir()):
        algo = ET.parse(f).getroot()
        out.append((int(algo.get("minBytes")), int(algo.get("maxBytes")), f.name))  # type: ignore[arg-type]
    return out


def test_export_writes_verified_files_whose_ranges_tile_the_study(run_dir: Path, tmp_path: Path) -> None:
    from hub.plugins import get_manager
    from hub.verify import check

    p = _collhub("report", str(run_dir), "--no-plot", "--export", "msccl", str(tmp_path / "msccl"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    manifest = json.loads((tmp_path / "msccl" / "export.json").read_text())
    assert manifest["target"] == "msccl-executor-nccl" and not any(s["not_exported"] for s in manifest["studies"])
    expected = _expected(run_dir)
    for st in manifest["studies"]:
        net = st["key"]["network"]
        winners = expected[net][0]
        study_dir = Path(st["dir"])
        algo_dir = study_dir / "msccl-algorithms"
        ranges = _ranges(algo_dir)
        # Executor semantics: minBytes <= nBytes <= maxBytes; consecutive files meet with no gap.
        assert ranges[0][0] == winners[0][0] and ranges[-1][1] == winners[-1][0]
        for (_lo, hi, _), (lo2, _hi2, _) in zip(ranges, ranges[1:], strict=False):
            assert hi + 1 == lo2
        for size, source in winners:  # every studied size falls in the file of its winner
            (name,) = [n for lo, hi, n in ranges if lo <= size <= hi]
            assert name.split("-")[1] == source
        env = (study_dir / "msccl.env").read_text().splitlines()
        assert "MSCCL_ENABLE=1" in env and f"MSCCL_ALGO_DIR={algo_dir}" in env
        for f in algo_dir.iterdir():
            alg = get_manager().run_producer("mscclang.ir", {"path": str(f)})
            assert alg.ranks == 8 and alg.collective.value == "allreduce"
            check(alg)  # structure, progress and semantics: the exported file computes an all-reduce


def test_legacy_target_uses_exclusive_bounds_and_xml_files(run_dir: Path, tmp_path: Path) -> None:
    p = _collhub(
        "report",
        str(run_dir),
        "--no-plot",
        "--export",
        "msccl",
        str(tmp_path / "old"),
        "--target",
        "msccl-legacy",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    manifest = json.loads((tmp_path / "old" / "export.json").read_text())
    ring = next(s for s in manifest["studies"] if s["key"]["network"] == "ring:8")
    ranges = _ranges(Path(ring["dir"]) / "msccl-algorithms")
    assert ranges[0][0] == 1024 and ranges[-1][1] == (16 << 20) + 1  # maxBytes is exclusive there
    assert all(hi == lo2 for (_l, hi, _), (lo2, _h, _) in zip(ranges, ranges[1:], strict=False))
    env = (Path(ring["dir"]) / "msccl.env").read_text().splitlines()
    files = next(x for x in env if x.startswith("MSCCL_XML_FILES=")).split("=", 1)[1].split(":")
    assert [Path(f).name for f in files] == [n for _l, _h, n in ranges]


def test_winners_that_cannot_be_exported_are_listed_exit_1(run_dir: Path, tmp_path: Path) -> None:
    p = _collhub(
        "report",
        str(run_dir),
        "--no-plot",
        "--export",
        "msccl",
        str(tmp_path / "none"),
        cwd=tmp_path,
        env={"COLLHUB_DISABLE_PLUGINS": "collhub-mscclang"},
    )
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert lines[0].startswith("error: direct (1024..") and lines[0].endswith(
        "was not exported: mscclang.export is not installed (pip install collhub-mscclang)"
    )
    assert lines[-1].startswith("hint: ") and "export.json lists every winner, with the reason" in lines[-1]
    assert "Traceback" not in p.stderr
    manifest = json.loads((tmp_path / "none" / "export.json").read_text())
    assert sum(len(s["not_exported"]) for s in manifest["studies"]) == len(lines) - 1
    again = _collhub("report", str(run_dir), "--no-plot", "--export", "msccl", str(tmp_path / "none"), cwd=tmp_path)
    assert again.returncode == 2 and again.stderr.startswith("error: ")  # an existing export is not overwritten
    assert "--force" in again.stderr


def test_mscclpp_export_writes_plans_with_size_windows(run_dir: Path, tmp_path: Path) -> None:
    """`--export mscclpp`: each winner as an MSCCL++ plan whose min/max_message_size tile the
    study; each plan re-imported by `mscclpp.plan` at a size inside its window and proven."""
    pytest.importorskip("collhub_mscclpp")
    from hub.plugins import get_manager
    from hub.verify import check

    p = _collhub("report", str(run_dir), "--no-plot", "--export", "mscclpp", str(tmp_path / "pp"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    manifest = json.loads((tmp_path / "pp" / "export.json").read_text())
    assert manifest["target"] == "mscclpp" and not any(s["not_exported"] for s in manifest["studies"])
    expected = _expected(run_dir)
    for st in manifest["studies"]:
        winners = expected[st["key"]["network"]][0]
        assert st["env"] is None
        plans = sorted((Path(st["dir"]) / "mscclpp-plans").iterdir())
        ranges = []
        for f in plans:
            doc = json.loads(f.read_text())
            ranges.append((doc["min_message_size"], doc["max_message_size"], f.name))
            alg = get_manager().run_producer(
                "mscclpp.plan", {"path": str(f), "size": doc["min_message_size"], "verify": True}
            )
            assert alg.ranks == 8 and alg.collective.value == "allreduce"
            check(alg)
        assert ranges[0][0] == winners[0][0] and ranges[-1][1] == winners[-1][0]
        for (_lo, hi, _), (lo2, _hi2, _) in zip(ranges, ranges[1:], strict=False):
            assert hi + 1 == lo2
