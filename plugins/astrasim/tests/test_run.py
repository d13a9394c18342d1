"""astrasim.run: process handling and output parsing.

ASTRA-sim is not available here, so these tests run a small *stand-in* shell script in its
place. The stand-in tests OUR process handling only (arguments, working directory, exit codes,
timeouts, process groups, parsing); it simulates nothing. The lines it prints are ASTRA-sim's
exact report format (astra-sim.md §8) with the numbers the shared example's README documents for
a real run (90174 cycles on every rank).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from collhub_astrasim import Dim, build_bundle, consume_run, parse_output
from collhub_astrasim._run import RunParams
from hub.errors import ExternalToolError, UsageError
from hub.plugins import RunContext

from .astrasim_helpers import msccl_ring_allreduce

STANDIN = r"""#!/bin/sh
# stand-in for AstraSim_Analytical_Congestion_*: records how it was called, then acts per $STANDIN_MODE
pwd > standin-cwd.txt
printf '%s\n' "$@" > standin-args.txt
mode="${STANDIN_MODE:-ok}"
ranks="${STANDIN_RANKS:-8}"
T="${STANDIN_T:-90174}"
case "$mode" in
  fail)
    echo "[2025-06-10 10:00:00.000] [workload] [info] reading workload/all_reduce.0.et"
    echo "terminate called after throwing an instance of 'std::runtime_error'" >&2
    echo "  what():  Attribute comm_size not found in node 0" >&2
    exit 3 ;;
  hang)
    sh -c 'trap "" TERM; sleep 300' &
    echo $! > child.pid
    sleep 300 ;;
  silent)
    exit 0 ;;
esac
mkdir -p log
i=0
while [ "$i" -lt "$ranks" ]; do
  echo "[2025-06-10 10:00:01.$i] [workload] [info] sys[$i] finished, $T cycles, exposed communication $T cycles." \
    | tee -a log/log.log
  i=$((i+1))
done
i=0
while [ "$i" -lt "$ranks" ]; do
  echo "[2025-06-10 10:00:02.$i] [statistics] [info] sys[$i]. Post statistics processing start."
  echo "[2025-06-10 10:00:02.$i] [statistics] [info] sys[$i]. Post statistics processing end."
  echo "[2025-06-10 10:00:02.$i] [statistics] [info] sys[$i], Wall time: $T"
  echo "[2025-06-10 10:00:02.$i] [statistics] [info] sys[$i], Comm time: $T"
  i=$((i+1))
done
"""

MIB = 1 << 20


@pytest.fixture()
def standin(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "AstraSim_Analytical_Congestion_Unaware"
    path.parent.mkdir()
    path.write_text(STANDIN)
    path.chmod(0o755)
    return path


def _run(tmp_path: Path, standin: Path, **params: object):
    ctx = RunContext(workdir=tmp_path / "run")
    p = RunParams(network="ring:8", size="1MiB", binary=str(standin), **params)  # type: ignore[arg-type]
    return consume_run(msccl_ring_allreduce(), p, ctx)


def test_parses_the_report_into_nccl_tests_metrics(tmp_path: Path, standin: Path) -> None:
    result = _run(tmp_path, standin, keep=True)
    m = result.metrics
    assert result.component == "astrasim.run"
    assert m["time_ns"] == 90174 and m["time_us"] == pytest.approx(90.174)
    assert m["exposed_comm_ns"] == 90174
    assert m["predicted_ns"] == 90174 and m["matches_prediction"] is True  # hub.simulate agrees
    # nccl-tests: algbw = S / t in 10^9 B/s; all-reduce busbw factor 2(n-1)/n = 1.75 at n = 8
    assert m["algbw_GBps"] == pytest.approx(1048576 / 90174e-9 / 1e9)
    assert m["busbw_GBps"] == pytest.approx(1048576 / 90174e-9 / 1e9 * 1.75)
    assert result.details["per_rank_ns"] == [90174] * 8
    assert result.details["per_rank_wall_ns"] == [90174] * 8
    assert result.details["per_rank_comm_ns"] == [90174] * 8
    bundle = tmp_path / "run" / result.artifacts["bundle"]
    assert (tmp_path / "run" / result.artifacts["log"]).is_file()
    # the binary ran in the bundle with exactly the documented options
    assert (bundle / "standin-cwd.txt").read_text().strip() == str(bundle.resolve())
    assert (bundle / "standin-args.txt").read_text().split() == [
        "--workload-configuration=workload/all_reduce",
        "--system-configuration=system.json",
        "--network-configuration=network.yml",
        "--remote-memory-configuration=memory.json",
        "--logging-folder=log",
    ]


@pytest.fixture()
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary-files directory of this test's own, to see what a run leaves there."""
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_without_out_the_bundle_is_temporary(tmp_path: Path, standin: Path, own_tmp: Path) -> None:
    result = _run(tmp_path, standin)
    assert result.metrics["time_ns"] == 90174 and result.artifacts == {}
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())  # nothing in the run dir
    assert not any(own_tmp.iterdir())  # and the temporary bundle is gone
    kept = _run(tmp_path, standin, keep=True)
    bundle = tmp_path / "run" / kept.artifacts["bundle"]
    assert (bundle / "run.sh").is_file() and (bundle / "log" / "stdout.txt").is_file()
    assert not any(own_tmp.iterdir())
    named = _run(tmp_path, standin, out="mine")
    assert named.artifacts["bundle"] == "mine" and (tmp_path / "run" / "mine" / "run.sh").is_file()


def test_a_failed_temporary_run_keeps_its_bundle_and_says_where(
    tmp_path: Path, standin: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "fail")
    with pytest.raises(ExternalToolError) as info:
        _run(tmp_path, standin)
    (left,) = own_tmp.iterdir()
    assert f"the bundle is kept in {left / 'bundle'}" in (info.value.hint or "")
    assert (left / "bundle" / "log" / "stderr.txt").is_file()


def test_binary_from_environment(tmp_path: Path, standin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLLHUB_ASTRASIM_BIN", str(standin))
    ctx = RunContext(workdir=tmp_path / "run")
    result = consume_run(msccl_ring_allreduce(), RunParams(network="ring:8", size=MIB), ctx)
    assert result.metrics["time_ns"] == 90174 and result.metrics["backend"] == "unaware"


def test_missing_binary_says_how_to_set_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLLHUB_ASTRASIM_BIN", raising=False)
    with pytest.raises(ExternalToolError, match="no ASTRA-sim binary given") as info:
        consume_run(msccl_ring_allreduce(), RunParams(network="ring:8", size=MIB), RunContext(workdir=tmp_path))
    assert "COLLHUB_ASTRASIM_BIN" in (info.value.hint or "") and "binary=" in (info.value.hint or "")
    with pytest.raises(ExternalToolError, match="binary not found: /nonexistent/astra"):
        _run(tmp_path, Path("/nonexistent/astra"))


def test_nonzero_exit_reports_the_stderr_tail(tmp_path: Path, standin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_MODE", "fail")
    with pytest.raises(ExternalToolError, match=r"exited with status 3: .*Attribute comm_size not found in node 0"):
        _run(tmp_path, standin)


def test_timeout_kills_the_whole_process_group(tmp_path: Path, standin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_MODE", "hang")
    start = time.monotonic()
    with pytest.raises(ExternalToolError, match="timeout of 1 s; its process group was killed"):
        _run(tmp_path, standin, timeout=1, keep=True)
    assert time.monotonic() - start < 15
    pid_files = list((tmp_path / "run").glob("*/child.pid"))
    assert len(pid_files) == 1
    child = int(pid_files[0].read_text())  # a grandchild that ignores SIGTERM
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie waiting for init to reap it is dead


def test_output_without_finished_lines_is_an_error(
    tmp_path: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "silent")
    with pytest.raises(ExternalToolError, match="reported no 'sys\\[i\\] finished"):
        _run(tmp_path, standin)


def test_missing_ranks_are_an_error(tmp_path: Path, standin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_RANKS", "5")
    with pytest.raises(ExternalToolError, match=r"only 5 of 8 ranks finished \(missing sys \[5, 6, 7\]\)"):
        _run(tmp_path, standin)


def test_backend_must_agree_with_the_binary(tmp_path: Path, standin: Path) -> None:
    with pytest.raises(UsageError, match="congestion-unaware one"):
        _run(tmp_path, standin, backend="aware")


def test_aware_binary_refuses_multi_dim_before_running(tmp_path: Path) -> None:
    aware = tmp_path / "AstraSim_Analytical_Congestion_Aware"
    aware.write_text(STANDIN)
    aware.chmod(0o755)
    ctx = RunContext(workdir=tmp_path / "run")
    with pytest.raises(UsageError, match="only 1-D networks"):
        consume_run(msccl_ring_allreduce(), RunParams(network="ring:4,ring:2", size=MIB, binary=str(aware)), ctx)


def test_run_sh_runs_from_its_directory_with_a_relative_binary(tmp_path: Path, standin: Path) -> None:
    b = build_bundle(msccl_ring_allreduce(), out=tmp_path / "bundle", dims=[Dim("Ring", 8, 50, 500)], size=MIB)
    proc = subprocess.run(
        ["./bundle/run.sh", "bin/AstraSim_Analytical_Congestion_Unaware"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert (b.path / "standin-cwd.txt").read_text().strip() == str(b.path.resolve())
    assert parse_output(proc.stdout).time_ns == 90174
    env = {**os.environ, "COLLHUB_ASTRASIM_BIN": str(standin)}
    assert subprocess.run([str(b.path / "run.sh")], cwd="/", env=env, capture_output=True, timeout=30).returncode == 0
    no_bin = {k: v for k, v in os.environ.items() if k != "COLLHUB_ASTRASIM_BIN"}
    proc = subprocess.run([str(b.path / "run.sh")], env=no_bin, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "COLLHUB_ASTRASIM_BIN" in proc.stderr


def test_workload_input_reports_its_collective_bandwidth(tmp_path: Path, standin: Path) -> None:
    from hub.chakra import Collective, Workload

    wl = Workload.single_collective(Collective.ALLGATHER, 8, 131072)  # ASTRA-sim: per-rank part
    ctx = RunContext(workdir=tmp_path / "run")
    result = consume_run(wl, RunParams(network="ring:8", binary=str(standin), algorithm_for={"allgather": "ring"}), ctx)
    m = result.metrics
    # nccl-tests measures an all-gather by its whole output: 8 x 131072 B; busbw factor (n-1)/n
    assert m["size"] == MIB and m["algbw_GBps"] == pytest.approx(MIB / 90174)
    assert m["busbw_GBps"] == pytest.approx(MIB / 90174 * 7 / 8)
    assert result.details["implementations"] == {"allgather": "custom:algorithm/custom_allgather"}
