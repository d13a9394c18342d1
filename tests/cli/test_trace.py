"""`collhub trace show | verify | convert` as real subprocesses.

Inputs: ASTRA-sim's own example ETs (custom ring all-reduce, 8 NPUs, 1 MB), traces written by
`collhub produce hub.ring`, and a deliberately wrong algorithm. Expected numbers are derived by
hand from the ring algorithm: all-reduce on n ranks = reduce-scatter + all-gather, each rank
sends and receives 2(n-1) messages of S/n bytes and reduces n-1 times.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hub.chakra import AlgorithmMeta, Buffer, Collective, RankGraphBuilder, build_algorithm, write_algorithm


def _collhub(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "COLLHUB_LOAD_PLUGINS": ""},
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single ``error:`` line of a failed command; no traceback anywhere."""
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


@pytest.fixture(scope="module")
def example(astrasim_example: Path) -> str:
    prefix = astrasim_example / "algorithm" / "custom_allreduce"
    if not Path(f"{prefix}.0.et").is_file():
        pytest.skip(f"{prefix}.0.et not found")
    return str(prefix)


@pytest.fixture(scope="module")
def ring4(tmp_path_factory: pytest.TempPathFactory) -> str:
    """`collhub produce hub.ring` output (needs hub.algorithms)."""
    prefix = tmp_path_factory.mktemp("ring") / "ring4"
    proc = _collhub("produce", "hub.ring", "--set", "collective=allreduce", "--set", "ranks=4", "--out", str(prefix))
    assert proc.returncode == 0, proc.stderr
    return str(prefix)


# --------------------------------------------------------------------------- show
def test_show_astrasim_example(example: str) -> None:
    proc = _collhub("trace", "show", example, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    s = doc["summary"]
    assert doc["kind"] == "algorithm" and s["collective"] == "allreduce" and s["ranks"] == 8
    # ring all-reduce, n = 8: 2*7 = 14 sends and 14 receives per rank, 7 reductions per rank
    assert (s["send"], s["recv"], s["comp"], s["nodes"]) == (8 * 14, 8 * 14, 8 * 7, 8 * 35)
    text = _collhub("trace", "show", example)
    assert text.returncode == 0
    # 112 messages of 1 MiB / 8 = 128 KiB each: 14 MiB in total
    assert "8 ranks" in text.stdout and "112" in text.stdout and "14.0 MiB" in text.stdout


def test_show_workload(astrasim_example: Path) -> None:
    proc = _collhub("trace", "show", str(astrasim_example / "workload" / "all_reduce"), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kind"] == "workload"


def test_show_produced_ring(ring4: str) -> None:
    s = json.loads(_collhub("trace", "show", ring4, "-f", "json").stdout)["summary"]
    # n = 4: 6 sends, 6 receives and 3 reductions per rank; one chunk per rank of input
    assert (s["ranks"], s["send"], s["recv"], s["comp"]) == (4, 24, 24, 12)
    assert s["producer"] == "hub.ring" and s["in_chunks"] == 4 and s["inplace"] is True


# --------------------------------------------------------------------------- verify
def test_verify_astrasim_example(example: str) -> None:
    proc = _collhub("trace", "verify", example, "-f", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    # the example declares no buffers (0 chunks): structure and progress are what can be checked,
    # and the verdict says what was not
    assert doc["levels_checked"] == ["structure", "progress"]
    assert doc["not_checked"] == {"semantics": "no buffer information (in_chunks=0, out_chunks=0)"}
    proc = _collhub("trace", "verify", example)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith(
        "(checked structure, progress; semantics not checked: no buffer information (in_chunks=0, out_chunks=0))"
    )


def test_verify_produced_ring_up_to_semantics(ring4: str) -> None:
    proc = _collhub("trace", "verify", ring4)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: ") and "semantics" in proc.stdout


def _wrong_algorithm(prefix: Path) -> None:
    """Rank 0 sends to 1 (matched); rank 1 also waits for a second message rank 0 never sends."""
    b = [RankGraphBuilder(0), RankGraphBuilder(1)]
    b[0].send(1, src=(Buffer.INPUT, 0))
    b[1].recv(0, dst=(Buffer.OUTPUT, 0))
    b[1].recv(0, dst=(Buffer.OUTPUT, 1), tag=7)  # no SEND with tag 7 anywhere
    b[0].recv(1, dst=(Buffer.OUTPUT, 1))  # rank 1 never sends either
    meta = AlgorithmMeta(collective=Collective.ALLGATHER, ranks=2, in_chunks=1, out_chunks=2, name="wrong")
    write_algorithm(build_algorithm(meta, b), prefix)


def test_verify_wrong_algorithm_lists_problems(tmp_path: Path) -> None:
    _wrong_algorithm(tmp_path / "wrong")
    proc = _collhub("trace", "verify", str(tmp_path / "wrong"), "--level", "structure")
    assert proc.returncode == 3
    assert _one_error_line(proc).startswith(f"error: {tmp_path / 'wrong'}: verification failed with ")
    lines = proc.stdout.splitlines()
    # both unmatched receives are reported, each located by rank and node
    assert any("rank 1" in ln and "node 1" in ln for ln in lines), proc.stdout
    assert any("rank 0" in ln and "node 1" in ln for ln in lines), proc.stdout
    as_json = json.loads(_collhub("trace", "verify", str(tmp_path / "wrong"), "-f", "json").stdout)
    assert as_json["ok"] is False
    assert {(p["rank"], p["node"]) for p in as_json["problems"] if p["level"] == "structure"} >= {(1, 1), (0, 1)}


def test_verify_rejects_unknown_level(ring4: str) -> None:
    proc = _collhub("trace", "verify", ring4, "--level", "vibes")
    assert proc.returncode == 2 and "unknown level 'vibes'" in _one_error_line(proc)


# --------------------------------------------------------------------------- convert
def _mlc_nodes(path: Path) -> list[tuple]:
    """Decode with MLCommons' reader: (id, type, data deps, what ASTRA-sim reads) per node."""
    pb = pytest.importorskip("chakra.schema.protobuf.et_def_pb2", reason="mlc-chakra is not installed")
    protolib = pytest.importorskip("chakra.src.third_party.utils.protolib")
    fh = protolib.openFileRd(str(path))
    rows = []
    try:
        assert protolib.decodeMessage(fh, pb.GlobalMetadata())
        while True:
            node = pb.Node()
            if not protolib.decodeMessage(fh, node):
                break
            attrs = {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr if a.WhichOneof("value")}
            # What ASTRA-sim reads: the peer (comm_dst of a SEND, comm_src of a RECV), tag, size;
            # a COMP's duration. (Our writer adds the redundant other end, which it ignores.)
            peer = attrs.get("comm_dst") if node.type == pb.COMM_SEND_NODE else attrs.get("comm_src")
            extra = (
                node.duration_micros
                if node.type == pb.COMP_NODE
                else (peer, attrs.get("comm_tag"), attrs.get("comm_size"))
            )
            rows.append((node.id, node.type, sorted(node.data_deps), extra))
    finally:
        fh.close()
    return rows


def test_convert_round_trip_astrasim_example(example: str, tmp_path: Path) -> None:
    first = tmp_path / "a.json"
    assert _collhub("trace", "convert", example, str(first)).returncode == 0
    back = _collhub("trace", "convert", str(first), str(tmp_path / "back"))
    assert back.returncode == 0, back.stderr
    assert _collhub("trace", "convert", str(tmp_path / "back"), str(tmp_path / "b.json")).returncode == 0
    assert json.loads(first.read_text()) == json.loads((tmp_path / "b.json").read_text())
    # Independently of our reader: ASTRA-sim's view of every node is unchanged.
    for rank in range(8):
        assert _mlc_nodes(tmp_path / f"back.{rank}.et") == _mlc_nodes(Path(f"{example}.{rank}.et")), rank


def test_convert_round_trip_produced_ring(ring4: str, tmp_path: Path) -> None:
    assert _collhub("trace", "convert", ring4, str(tmp_path / "r.json")).returncode == 0
    assert _collhub("trace", "convert", str(tmp_path / "r.json"), str(tmp_path / "r")).returncode == 0
    for rank in range(4):
        assert (tmp_path / f"r.{rank}.et").read_bytes() == Path(f"{ring4}.{rank}.et").read_bytes()
    assert _collhub("trace", "verify", str(tmp_path / "r")).returncode == 0


def test_convert_needs_one_json_side(ring4: str, tmp_path: Path) -> None:
    proc = _collhub("trace", "convert", ring4, str(tmp_path / "other"))
    assert proc.returncode == 2 and "one ET prefix and one .json file" in _one_error_line(proc)


# --------------------------------------------------------------------------- bad input
@pytest.fixture
def corrupt(example: str, tmp_path: Path) -> Path:
    """A copy of the example whose rank-3 file is cut off in the middle of a node."""
    for rank in range(8):
        shutil.copyfile(f"{example}.{rank}.et", tmp_path / f"c.{rank}.et")
    data = Path(f"{example}.3.et").read_bytes()
    (tmp_path / "c.3.et").write_bytes(data[: len(data) // 2])
    return tmp_path / "c"


@pytest.mark.parametrize("command", ["show", "verify", "convert"])
def test_truncated_file_is_one_line_naming_it(corrupt: Path, command: str) -> None:
    args = [str(corrupt)] + ([str(corrupt.parent / "out.json")] if command == "convert" else [])
    proc = _collhub("trace", command, *args)
    assert proc.returncode == 3
    assert "c.3.et" in _one_error_line(proc)
    assert not (corrupt.parent / "out.json").exists()  # nothing half-written


def test_garbage_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "g.0.et").write_bytes(b"\xff" * 64)
    proc = _collhub("trace", "show", str(tmp_path / "g"))
    assert proc.returncode == 3 and "g.0.et" in _one_error_line(proc)
    proc = _collhub("trace", "show", str(tmp_path / "nothing"))
    assert proc.returncode in (2, 3) and "nothing" in _one_error_line(proc)


def test_bad_json_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "cut.json").write_text('{"format": "collhub.algorithm", "meta": ')
    proc = _collhub("trace", "convert", str(tmp_path / "cut.json"), str(tmp_path / "o"))
    assert proc.returncode == 3 and _one_error_line(proc).startswith(f"error: {tmp_path / 'cut.json'}:1:")
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    proc = _collhub("trace", "convert", str(tmp_path / "other.json"), str(tmp_path / "o"))
    assert proc.returncode == 3 and _one_error_line(proc).startswith(f"error: {tmp_path / 'other.json'}: ")
    assert not list(tmp_path.glob("o.*"))
