"""Verification problems of an imported MSCCL-IR file speak MSCCLang: gpu, tb, step and type;
the true problem count; `produce mscclang.ir` warns about (or, with verify=true, refuses) a file
that does not compute its collective. Real subprocesses for the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from collhub_mscclang import read_msccl_ir
from hub.verify import verify

COLLHUB = [sys.executable, "-m", "hub.cli"]
BAD = "mscclang_allreduce_pcie_hierarchical_n8_i1_LL_CHECKFAIL.xml"  # MSCCLang's own Check() fails it
GOOD = "mscclang_allreduce_ring_n8_ch1_i1_LL128.xml"
_ORIGIN = re.compile(r"^gpu (\d+) tb (\d+) step (\d+) \((\w+)[^)]*\), line (\d+)$")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COLLHUB, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def _xml_step_type(path: Path, gpu: int, tb: int, step: int) -> str | None:
    for g in ET.parse(path).getroot().iter("gpu"):
        if int(g.get("id", -1)) == gpu:
            for t in g.iter("tb"):
                if int(t.get("id", -1)) == tb:
                    for s in t.iter("step"):
                        if int(s.get("s", -1)) == step:
                            return s.get("type")
    return None


def _line_says(path: Path, line: int, gpu: int, tb: int, step: int) -> bool:
    """The text of ``line`` is that step's <step> (read from the file, not from the importer), and
    the nearest <tb>/<gpu> above it are that tb and gpu."""
    lines = path.read_text().splitlines()[:line]
    here = lines[-1]
    tb_line = next(x for x in reversed(lines) if "<tb " in x)
    gpu_line = next(x for x in reversed(lines) if "<gpu " in x)
    return f'<step s="{step}"' in here and f'<tb id="{tb}"' in tb_line and f'<gpu id="{gpu}"' in gpu_line


def test_problems_name_their_xml_step_and_are_all_counted(msccl_dir: Path) -> None:
    path = msccl_dir / BAD
    alg = read_msccl_ir(path)
    rep = verify(alg)
    assert not rep.ok and len(rep.problems) == 50 < rep.problem_count
    every = verify(alg, max_problems=10**6)
    assert len(every.problems) == every.problem_count == rep.problem_count
    for p in rep.problems:
        m = _ORIGIN.match(p.origin or "")
        assert m, p
        gpu, tb, step, kind, line = int(m[1]), int(m[2]), int(m[3]), m[4], int(m[5])
        assert gpu == p.rank and _xml_step_type(path, gpu, tb, step) == kind, p  # read back from the XML itself
        assert _line_says(path, line, gpu, tb, step), p
        assert f"({p.origin})" in str(p)


def test_cli_verify_counts_lists_and_reports_origins(msccl_dir: Path, tmp_path: Path) -> None:
    assert (
        run("produce", "mscclang.ir", "--set", f"path={msccl_dir / BAD}", "--out", "bad", cwd=tmp_path).returncode == 0
    )
    p = run("trace", "verify", "bad", "--max-problems", "3", cwd=tmp_path)
    assert p.returncode == 3 and len(p.stdout.splitlines()) == 3
    assert all(" tb " in line and " step " in line for line in p.stdout.splitlines())
    j = run("trace", "verify", "bad", "-f", "json", "--max-problems", "5", cwd=tmp_path)
    doc = json.loads(j.stdout)
    assert len(doc["problems"]) == 5 and doc["problem_count"] > 50
    assert f"failed with {doc['problem_count']} problem(s) (3 listed" in p.stderr
    assert all(_ORIGIN.match(q["origin"]) for q in doc["problems"])


def test_produce_warns_or_refuses_a_wrong_file(msccl_dir: Path, tmp_path: Path) -> None:
    warned = run("produce", "mscclang.ir", "--set", f"path={msccl_dir / BAD}", "--out", "bad", cwd=tmp_path)
    assert warned.returncode == 0 and "warning:" in warned.stderr and "verify=true" in warned.stderr
    refused = run(
        "produce",
        "mscclang.ir",
        "--set",
        f"path={msccl_dir / BAD}",
        "--set",
        "verify=true",
        "--out",
        "bad2",
        cwd=tmp_path,
    )
    assert refused.returncode == 3 and not list(tmp_path.glob("bad2*"))
    assert "tb 0 step 5 (re), line 9" in refused.stderr and "Traceback" not in refused.stderr
    good = run("produce", "mscclang.ir", "--set", f"path={msccl_dir / GOOD}", "--out", "good", cwd=tmp_path)
    assert good.returncode == 0 and "warning" not in good.stderr


def test_a_reader_that_stops_ends_the_command_quietly(msccl_dir: Path, tmp_path: Path) -> None:
    """`collhub trace verify ... | head -1`: 576 problems are ~70 KB, more than a pipe holds."""
    assert (
        run("produce", "mscclang.ir", "--set", f"path={msccl_dir / BAD}", "--out", "bad", cwd=tmp_path).returncode == 0
    )
    proc = subprocess.Popen(
        [*COLLHUB, "trace", "verify", "bad", "--max-problems", "100000"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("[semantics]")
    proc.stdout.close()  # what `head -1` does
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, stderr
    assert stderr == "", stderr
