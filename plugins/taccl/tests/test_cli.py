"""From the shell: `collhub produce taccl.synthesize`, then simulate and export (real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

COLLHUB = [sys.executable, "-m", "hub.cli"]


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COLLHUB, *args], capture_output=True, text=True, cwd=cwd, timeout=120, env={**os.environ, **(env or {})}
    )


def produce(cwd: Path, *sets: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    args = ["produce", "taccl.synthesize", "--out", "out/alg"]
    for s in sets:
        args += ["--set", s]
    return run(*args, cwd=cwd, env=env)


def test_sketch_to_simulation_and_xml(taccl_dir: Path, tmp_path: Path) -> None:
    topo, sketch = taccl_dir / "topo" / "topo-ndv2-1MB.json", taccl_dir / "sketch" / "sk1-ndv2-n1.json"
    p = produce(tmp_path, "collective=allgather", f"topology={topo}", f"sketch={sketch}")
    assert p.returncode == 0, p.stderr
    assert len(list((tmp_path / "out").glob("alg.*.et"))) == 8
    # NDv2 = DGX-1 NVLinks; 1 MB in 46 us per single NVLink (the profile's second beta class)
    bw = 1e6 / 46e-6 / 2**30
    s = run(
        "consume",
        "hub.simulate",
        "out/alg",
        "--set",
        f"network=dgx1@bw={bw!r},lat=300",
        "--set",
        "mode=aware",
        "--set",
        "size=8MB",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["metrics"]["time_ns"] > 0
    x = run("consume", "mscclang.export", "out/alg", "--set", "out=ag.xml", "--set", "verify=true", cwd=tmp_path)
    assert x.returncode == 0, x.stderr
    assert (tmp_path / "ag.xml").read_text().startswith("<algo ")


def _bad(tmp_path: Path, name: str, data: object | str) -> Path:
    f = tmp_path / name
    f.write_text(data if isinstance(data, str) else json.dumps(data))
    return f


def _expect_error(p: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert p.returncode == code, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and lines[1].startswith("hint: ") and len(lines) == 2, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert "Traceback" not in p.stderr


NONE = {"nnodes": 1, "intranode_sketch": {"strategy": "none"}, "symmetry_offsets": []}


@pytest.mark.parametrize(
    "name,topo,sketch,needles",
    [
        ("malformed", "topo-ndv2-1MB.json", '{"nnodes": 1, "intranode_sketch": ', ("malformed JSON",)),
        (
            "overlap",
            "topo-dgx2-1MB.json",
            {
                **NONE,
                "intranode_sketch": {
                    "strategy": "switch",
                    "switches": [[0, 1, 2], [2, 3]],
                    "switch_hyperedge_strategy": ["uc-min", "uc-max"],
                },
            },
            ("intranode_sketch.switches[1]", "overlaps"),
        ),
        ("no-internode", "topo-ndv2-1MB.json", {**NONE, "nnodes": 2}, ("internode_sketch", "missing")),
        (
            "fanout",
            "topo-ndv2-1MB.json",
            {**NONE, "nnodes": 2, "internode_sketch": {"strategy": "relay", "internode_conn": {"0": [1], "2": [3, 4]}}},
            ("internode_sketch.internode_conn", "fan-outs"),
        ),
        (
            "badsym",
            "topo-ndv2-1MB.json",
            {**NONE, "symmetry_offsets": [[1, 8]]},
            ("symmetry_offsets[0]", "not a symmetry"),
        ),
        (
            "revmap",
            "topo-ndv2-1MB.json",
            {
                **NONE,
                "nnodes": 2,
                "internode_sketch": {
                    "strategy": "relay",
                    "internode_conn": {"0": [1]},
                    "gpus_to_sender_rev_map": {"0": [0, 1, 2]},
                },
            },
            ("gpus_to_sender_rev_map", "GPU(s) [3, 4, 5, 6, 7]"),
        ),
    ],
)
def test_bad_sketch_is_one_line_error_exit_3(
    taccl_dir: Path, tmp_path: Path, name: str, topo: str, sketch: object, needles: tuple[str, ...]
) -> None:
    sk = _bad(tmp_path, f"{name}.json", sketch)
    p = produce(tmp_path, "collective=allgather", f"topology={taccl_dir / 'topo' / topo}", f"sketch={sk}")
    _expect_error(p, 3, f"{name}.json", *needles)
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_disconnected_topology_and_unservable_collective(taccl_dir: Path, tmp_path: Path) -> None:
    sketch = taccl_dir / "sketch" / "sk1-ndv2-n1.json"
    disc = _bad(
        tmp_path,
        "disc_1MB.json",
        {
            "name": "disc_1MB",
            "gpus_per_node": 3,
            "alpha": 1,
            "links": [[0, 1, 0], [1, 0, 0], [0, 0, 0]],
            "betas": [[0, 5, 0], [5, 0, 0], [0, 0, 0]],
            "invbws": [[0, 6, 0], [6, 0, 0], [0, 0, 0]],
        },
    )
    _expect_error(
        produce(tmp_path, "collective=allgather", f"topology={disc}", f"sketch={sketch}"),
        3,
        "disc_1MB.json",
        "disconnected",
    )
    # links[dst][src]: GPU 0 -> 1 only, so GPU 1's data can never reach GPU 0
    oneway = _bad(
        tmp_path,
        "oneway_1MB.json",
        {
            "name": "oneway_1MB",
            "gpus_per_node": 2,
            "alpha": 1,
            "links": [[0, 0], [1, 0]],
            "betas": [[0, 0], [5, 0]],
            "invbws": [[0, 0], [6, 0]],
        },
    )
    _expect_error(
        produce(tmp_path, "collective=allgather", f"topology={oneway}", f"sketch={sketch}"),
        3,
        "oneway_1MB.json",
        "cannot be reached",
    )
    _expect_error(
        produce(tmp_path, "collective=allgather", f"topology={tmp_path / 'nope.json'}", f"sketch={sketch}"),
        3,
        "nope.json",
        "not found",
    )
    assert not (tmp_path / "out").exists()


def test_missing_key_names_file_and_key(taccl_dir: Path, tmp_path: Path) -> None:
    topo = _bad(tmp_path, "t_1MB.json", {"name": "NDv2_1MB", "alpha": 0.3, "node_betas_list": [23, 46]})
    _expect_error(
        produce(
            tmp_path, "collective=allgather", f"topology={topo}", f"sketch={taccl_dir / 'sketch' / 'sk1-ndv2-n1.json'}"
        ),
        3,
        "t_1MB.json",
        "node_invbws_list",
    )


def test_missing_solver_is_exit_4(tmp_path: Path) -> None:
    # a stand-in module shadows the real highspy and fails to import, as an absent one would
    (tmp_path / "shadow").mkdir()
    (tmp_path / "shadow" / "highspy.py").write_text("raise ImportError('No module named highspy')\n")
    p = produce(tmp_path, "collective=allgather", "network=ring:4", env={"PYTHONPATH": str(tmp_path / "shadow")})
    _expect_error(p, 4, "HiGHS")
    assert "pip install" in p.stderr
    assert not (tmp_path / "out").exists()


def test_network_errors(tmp_path: Path) -> None:
    _expect_error(produce(tmp_path, "collective=allgather", "network=rnig:4"), 3, "rnig")
    p = produce(tmp_path, "collective=broadcast", "network=ring:4")
    assert p.returncode == 2 and "broadcast" in p.stderr


def test_pipeline_example_validates(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "compare-allgather.yaml"
    p = run("pipeline", "validate", str(example), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "36 row(s)" in p.stdout
