"""`collhub report`'s "vs NCCL" column and `--export nccl-tuner` (issue 28, item 4).

The runs are real: nccl.auto (NCCL's own pick for one DGX-A100), hub.direct and hub.ring, simulated
congestion-aware on the network of that system and on ring:8 (not that system); and nccl.auto on
one DGX-H100, where NCCL picks NVLS and nccl.auto schedules it. Expected values
come from results.json's rows and from collhub-nccl's selection model (``choose``), not from the
report. The tuner CSV is read back by :func:`_parse_tuner`, written from NCCL's example tuner's
format (plugins/tuner/example: README.md and plugin.c of NCCL 2.30.7), not from the writer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hub import parse_size
from hub.pipeline import run_pipeline_text

from .test_report import _collhub

pytest.importorskip("collhub_nccl")

DGX = "switch:8@bw=223.517,lat=600"  # network_of(dgx-a100), as `collhub nccl explain` prints it
STUDY = f"""\
version: 1
name: vs-nccl
matrix:
  size: {{from: 1KiB, to: 64MiB, factor: 8}}
  network: ["{DGX}", "ring:8"]
sources:
  nccl:
    producer: nccl.auto
    params: {{collective: allreduce, ranks: 8, gpus_per_node: 8, system: dgx-a100, size: "${{size}}"}}
  direct: {{producer: hub.direct, params: {{collective: allreduce, ranks: 8}}}}
  ring: {{producer: hub.ring, params: {{collective: allreduce, ranks: 8}}}}
consumers:
  sim: {{use: hub.simulate, params: {{network: "${{network}}", size: "${{size}}", mode: aware}}}}
"""

# NCCL's example tuner (plugins/tuner/example/README.md, plugin.c), restated as the test's spec.
COLLECTIVES = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
ALGORITHMS = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
PROTOCOLS = {"ll", "ll128", "simple"}
MAX_LINE = 256  # fgets buffer: a longer line would be read as two


def _parse_tuner(text: str) -> list[dict[str, object]]:
    """Configurations as the example plugin reads them: skip '#' and empty lines, split on ',',
    trim blanks, 8 to 10 fields (numPipeOps and regBuff optional, -1 when omitted)."""
    out = []
    for raw in text.split("\n"):
        assert len(raw.encode()) + 1 < MAX_LINE, raw
        if not raw or raw.startswith("#"):
            continue
        f = [t.strip(" \t") for t in raw.split(",")]
        assert 8 <= len(f) <= 10, raw
        assert f[0] in COLLECTIVES and f[3] in ALGORITHMS and f[4] in PROTOCOLS, raw
        ints = [int(x) for x in f[5:]] + [-1] * (10 - len(f))
        out.append(
            {
                "coll": f[0],
                "min": int(f[1]),
                "max": int(f[2]),
                "algorithm": f[3],
                "protocol": f[4],
                "channels": ints[0],
                "nNodes": ints[1],
                "nRanks": ints[2],
                "numPipeOps": ints[3],
                "regBuff": ints[4],
            }
        )
    return out


def _match(configs: list[dict[str, object]], coll: str, nbytes: int, nodes: int, ranks: int) -> dict | None:
    """The first configuration the plugin would apply to a one-op call without registration."""
    for c in configs:
        if (
            c["coll"] == coll
            and c["min"] <= nbytes <= c["max"]  # type: ignore[operator]
            and c["nNodes"] in (-1, nodes)
            and c["nRanks"] in (-1, ranks)
            and c["numPipeOps"] in (-1, 1)
            and c["regBuff"] in (-1, 0)
        ):
            return c
    return None


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = run_pipeline_text(STUDY, tmp_path_factory.mktemp("vsnccl") / "run", jobs=1)
    assert r.ok
    return r.run_dir


def _rows(run_dir: Path) -> dict[tuple[str, str, int], float]:
    """(network, source, size) -> time_us, from results.json."""
    rows = json.loads((run_dir / "results.json").read_text())["rows"]
    return {(r["point"]["network"], r["source"], parse_size(r["point"]["size"])): r["metrics"]["time_us"] for r in rows}


def test_vs_nccl_column_has_nccls_pick_time_and_ratio(run: Path, tmp_path: Path) -> None:
    from collhub_nccl import choose, parse_system

    p = _collhub("report", str(run), "--no-plot", "-f", "json", "--out", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    studies = {st["key"]["network"]: st for st in json.loads(p.stdout)["studies"]}
    times = _rows(run)
    vs = studies[DGX]["vs_nccl"]
    assert vs["source"] == "nccl" and vs["system"] == "dgx-a100" and vs["system_matches_network"] is True
    system = parse_system("dgx-a100")
    sizes = sorted({s for (_n, _src, s) in times})
    assert [c["size_bytes"] for c in vs["cells"]] == sizes
    for c in vs["cells"]:
        size = c["size_bytes"]
        pick = choose(system, "AllReduce", size)
        assert c["pick"] == f"{pick.algorithm}/{pick.protocol}"
        assert c["model_us"] == pytest.approx(pick.time_us, abs=1e-3)
        assert c["time_us"] == pytest.approx(times[(DGX, "nccl", size)])
        other = min(("direct", "ring"), key=lambda s: times[(DGX, s, size)])
        assert c["best_other"] == other
        assert c["ratio"] == pytest.approx(times[(DGX, "nccl", size)] / times[(DGX, other, size)])
        assert c["scheduled"] is None  # an A100 node has no NVLS: what ran is NCCL's pick
    # ring:8 is not the system NCCL picked for: shown, never compared
    off = studies["ring:8"]["vs_nccl"]
    assert off["system_matches_network"] is False
    assert all(c["ratio"] is None and c["reason"] == "other system" for c in off["cells"])


def test_vs_nccl_in_report_md_table_and_png(run: Path, tmp_path: Path) -> None:
    p = _collhub("report", str(run), "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.count("| vs NCCL |") == 2 and "| NCCL pick | ran as |" in md
    assert "not this study's network" in md
    assert "vs NCCL" in p.stdout and "NCCL ÷ other" in p.stdout and "other system" in p.stdout
    assert (tmp_path / "r" / "report.png").stat().st_size > 10_000


def test_a_study_without_nccl_auto_has_no_column(tmp_path: Path) -> None:
    plain = STUDY.replace("producer: nccl.auto", "producer: nccl.ring")  # NCCL's ring, not its pick
    assert plain != STUDY
    r = run_pipeline_text(plain, tmp_path / "run", jobs=1)
    assert r.ok
    p = _collhub("report", str(r.run_dir), "--no-plot", "-f", "json", "--out", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert all(st["vs_nccl"] is None for st in json.loads(p.stdout)["studies"])


def test_tuner_csv_covers_ncclwinners_contiguously_and_leaves_others_out(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "tuner"
    p = _collhub("report", str(run), "--no-plot", "--export", "nccl-tuner", str(out), cwd=tmp_path)
    # the ring:8 study's NCCL wins are for another system: refused, exit 1, the rest written
    assert p.returncode == 1 and "not this study's network" in p.stderr, p.stderr
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["format"] == "collhub-nccl-tuner-export/1" and manifest["target"] == "nccl-tuner"
    times = _rows(run)
    sizes = sorted({s for (_n, _src, s) in times})
    for st in manifest["studies"]:
        net = st["key"]["network"]
        configs = _parse_tuner(Path(st["file"]).read_text())
        winners = {s: min(("nccl", "direct", "ring"), key=lambda src, s=s: times[(net, src, s)]) for s in sizes}
        assert Path(st["env"]).read_text().splitlines()[-1] == f"NCCL_TUNER_CONFIG_FILE={st['file']}"
        # ranges: inclusive, no overlap, contiguous within a run of NCCL wins
        spans = sorted((c["min"], c["max"]) for c in configs)
        assert all(lo <= hi for lo, hi in spans)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
        for i, size in enumerate(sizes):
            nxt = sizes[i + 1] if i + 1 < len(sizes) else size + 1
            hit_lo, hit_hi = _match(configs, "allreduce", size, 1, 8), _match(configs, "allreduce", nxt - 1, 1, 8)
            if winners[size] == "nccl" and net == DGX:
                # every byte count from this size up to the next studied one gets the same line
                assert hit_lo is not None and hit_lo is hit_hi, (size, configs)
                assert hit_lo["channels"] == -1 and (hit_lo["nNodes"], hit_lo["nRanks"]) == (1, 8)
            else:
                assert hit_lo is None and hit_hi is None, (net, size, configs)
        left = {(e["min_bytes"], e["source"]) for e in st["left_out"]}
        assert {src for _lo, src in left} <= {"direct", "ring"}
        assert all("not an NCCL algorithm" in e["reason"] for e in st["left_out"])
        assert all(c["numPipeOps"] == 1 and c["regBuff"] == 0 for c in configs)
        if net == DGX:
            assert st["exported"] and not st["not_exported"]
        else:
            assert not st["exported"] and st["not_exported"]
    assert any(w == "nccl" for w in (min(("nccl", "direct", "ring"), key=lambda s: times[(DGX, s, z)]) for z in sizes))


def test_tuner_line_is_what_ran(run: Path, tmp_path: Path) -> None:
    """The algorithm/protocol written is the schedule that was measured, read from the algorithm's
    own metadata in results.json."""
    from hub.results import export_nccl_tuner

    outcome = export_nccl_tuner(run, tmp_path / "t")
    doc = json.loads((run / "results.json").read_text())
    meta = {a["dir"]: a["summary"]["metadata"] for a in doc["algorithms"] if a["source"] == "nccl"}
    rows = [r for r in doc["rows"] if r["source"] == "nccl" and r["point"]["network"] == DGX]
    st = next(s for s in outcome.studies if s["key"]["network"] == DGX)
    for e in st["exported"]:
        for size in e["sizes"]:
            (row,) = [r for r in rows if parse_size(r["point"]["size"]) == size]
            m = meta[row["algorithm"]["dir"]]
            assert (e["line"]["algorithm"], e["line"]["protocol"]) == (
                {"Ring": "ring", "Tree": "tree", "PAT": "pat"}[m["nccl_algorithm"]],
                {"LL": "ll", "LL128": "ll128", "Simple": "simple"}[m["nccl_protocol"]],
            )


def test_tuner_export_refuses_below_bound_and_is_atomic(run: Path, tmp_path: Path) -> None:
    from hub.results import answer, export_nccl_tuner, load_document

    # a copy of the run whose NCCL rows are all marked below the lower bound
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    doc = json.loads((copy / "results.json").read_text())
    for r in doc["rows"]:
        if r["source"] == "nccl":
            r["metrics"]["time_over_bound"] = 0.5
            r["metrics"]["bound_ns"] = 2 * r["metrics"]["time_ns"]
    (copy / "results.json").write_text(json.dumps(doc))
    # without --allow-below-bound they never win, so no NCCL line at all
    p = _collhub("report", str(copy), "--no-plot", "--export", "nccl-tuner", str(tmp_path / "a"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for st in json.loads((tmp_path / "a" / "export.json").read_text())["studies"]:
        assert not _parse_tuner(Path(st["file"]).read_text()) and st["set_apart"]
    # winners allowed below the bound, export not: refused with the reason
    ans = answer(load_document(copy)[0], allow_below_bound=True)
    outcome = export_nccl_tuner(copy, tmp_path / "b", ans=ans)
    assert not outcome.exported and any("not an achievable time" in e["reason"] for e in outcome.not_exported)
    # an existing directory is left alone without --force
    before = sorted(x.name for x in (tmp_path / "a").iterdir())
    p = _collhub("report", str(copy), "--no-plot", "--export", "nccl-tuner", str(tmp_path / "a"), cwd=tmp_path)
    assert p.returncode == 2 and "already exists" in p.stderr
    assert sorted(x.name for x in (tmp_path / "a").iterdir()) == before


NVLS = """\
version: 1
name: nvls
matrix:
  size: [16MiB, 64MiB]
sources:
  nccl:
    producer: nccl.auto
    params: {collective: allreduce, ranks: 8, gpus_per_node: 8, system: dgx-h100, size: "${size}"}
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 8}}
consumers:
  sim: {use: hub.simulate, params: {network: "switch:8@bw=345.334,lat=600", size: "${size}", mode: aware}}
"""


def test_an_nvls_pick_runs_as_itself_and_the_tuner_names_it(tmp_path: Path) -> None:
    """NCCL picks NVLS on a DGX-H100 from 16 MiB, and nccl.auto schedules NVLS itself: the column
    shows no stand-in, and wherever NCCL wins the tuner line is ``nvls`` with NCCL's protocol."""
    from collhub_nccl import choose, parse_system

    r = run_pipeline_text(NVLS, tmp_path / "run", jobs=1)
    assert r.ok
    p = _collhub("report", str(r.run_dir), "--no-plot", "--export", "nccl-tuner", str(tmp_path / "t"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (st,) = json.loads((r.run_dir / "report.json").read_text())["studies"]
    picks = {}
    for c in st["vs_nccl"]["cells"]:
        pick = choose(parse_system("dgx-h100"), "AllReduce", c["size_bytes"])
        assert pick.algorithm == "NVLS" and c["pick"] == f"{pick.algorithm}/{pick.protocol}"
        assert c["scheduled"] is None  # what ran is NCCL's pick
        picks[c["size_bytes"]] = pick.protocol.lower()
    (ex,) = json.loads((tmp_path / "t" / "export.json").read_text())["studies"]
    lines = _parse_tuner(Path(ex["file"]).read_text())
    nccl_wins = [b["size_bytes"] for b in st["best"] if b["source"] == "nccl"]
    for size in nccl_wins:
        line = _match(lines, "allreduce", size, 1, 8)
        assert line is not None
        assert (line["algorithm"], line["protocol"]) == ("nvls", picks[size])
    assert len(lines) <= len(nccl_wins)
