"""From the shell: `collhub produce mscclang.ir` and `collhub consume mscclang.export` (subprocess)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

COLLHUB = [sys.executable, "-m", "hub.cli"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COLLHUB, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_produce_then_consume(msccl_dir: Path, tmp_path: Path) -> None:
    src = msccl_dir / "mscclang_allreduce_ring_n8_ch1_i1_LL128.xml"
    p = run("produce", "mscclang.ir", "--set", f"path={src}", "--out", str(tmp_path / "ring"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    ets = sorted(tmp_path.glob("ring.*.et"))
    assert len(ets) == 8
    out = tmp_path / "back.xml"
    c = run("consume", "mscclang.export", str(tmp_path / "ring"), "--set", f"out={out}", cwd=tmp_path)
    assert c.returncode == 0, c.stderr
    root = ET.parse(out).getroot()
    assert root.get("coll") == "allreduce" and root.get("ngpus") == "8"
    assert len(list(root.iter("step"))) == 120
    assert "replaced" not in c.stderr
    again = run("consume", "mscclang.export", str(tmp_path / "ring"), "--set", f"out={out}", cwd=tmp_path)
    assert again.returncode == 0 and f"warning: replaced the earlier {out}" in again.stderr  # never without a word


def test_bad_file_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text(
        '<algo name="x" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="1" coll="allreduce" '
        'inplace="1">\n<gpu id="0"\n'
    )
    p = run("produce", "mscclang.ir", "--set", f"path={bad}", "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert p.returncode == 3
    assert "Traceback" not in p.stderr
    assert f"{bad}:" in p.stderr and "malformed XML" in p.stderr
    assert not list(tmp_path.glob("x.*"))


def test_program_from_the_shell(tmp_path: Path) -> None:
    prog = Path(__file__).resolve().parents[1] / "examples" / "ring_allreduce.py"
    p = run(
        "produce",
        "mscclang.program",
        "--set",
        f"path={prog}",
        "--set",
        'args=["4"]',
        "--out",
        str(tmp_path / "ring4"),
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert len(list(tmp_path.glob("ring4.*.et"))) == 4
