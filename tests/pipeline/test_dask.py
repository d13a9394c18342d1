"""``collhub run --executor dask`` on real Dask clusters: a real ``dask scheduler`` and real
``dask worker`` processes on loopback (random ports, one thread each, no nanny, so a SIGKILL
really ends a worker), driven through the real ``collhub`` CLI as a subprocess.

The slow consumer comes from a fixture distribution (``tests/fixtures/plugins/dask``, a package
and its ``.dist-info``) put on ``PYTHONPATH`` of the CLI and of the workers that should have it,
so plugins load through real entry points on both sides. Every process is torn down in the
fixture's finalizer, also when a test fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from hub.pipeline._run.dask_cluster import probe_worker  # noqa: E402 - after the skip

REPO = Path(__file__).resolve().parents[2]
SLOW = REPO / "tests" / "fixtures" / "plugins" / "dask"
START_TIMEOUT = 40.0


def _env(with_plugin: bool = True, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COLLHUB_DASK", "DASK_"))}
    paths = [str(REPO)] + ([str(SLOW)] if with_plugin else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


class Cluster:
    """A scheduler and workers, each a subprocess in its own session (killed as a group)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.file = tmp / "scheduler.json"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def _spawn(self, args: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
        with open(self.tmp / log, "wb") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-m", "dask", *args],
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                cwd=self.tmp,
            )
        self.procs.append(proc)
        return proc

    def start_scheduler(self) -> None:
        self._spawn(
            ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(self.file)],
            _env(),
            "scheduler.log",
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                self.address = json.loads(self.file.read_text())["address"]
                return
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        raise AssertionError("dask scheduler did not start: " + (self.tmp / "scheduler.log").read_text())

    def add_worker(self, with_plugin: bool = True) -> subprocess.Popen[bytes]:
        n = len(self.workers)
        proc = self._spawn(
            [
                "worker",
                "--scheduler-file",
                str(self.file),
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                "--local-directory",
                str(self.tmp),
            ],
            _env(with_plugin),
            f"worker{n}.log",
        )
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=START_TIMEOUT, set_as_default=False) as client:
            client.wait_for_workers(n, timeout=START_TIMEOUT)

    def algorithm_arrivals(self) -> dict[str, dict[str, int]]:
        """Per worker: how often each algorithm task's value was put in its memory (run or fetched)."""
        from distributed import Client

        def count(dask_worker: Any) -> dict[str, int]:
            out: dict[str, int] = {}
            for entry in dask_worker.state.log:
                if len(entry) > 1 and entry[1] == "put-in-memory" and str(entry[0]).startswith("collhub-algorithm-"):
                    out[str(entry[0])] = out.get(str(entry[0]), 0) + 1
            return out

        with Client(self.address, timeout=START_TIMEOUT, set_as_default=False) as client:
            return dict(client.run(count))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait(10)


def _cluster(tmp: Path, workers: int, with_plugin: bool = True) -> Cluster:
    c = Cluster(tmp)
    try:
        c.start_scheduler()
        for _ in range(workers):
            c.add_worker(with_plugin)
        c.wait_for_workers(workers)
    except BaseException:
        c.stop()
        raise
    return c


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = _cluster(tmp_path_factory.mktemp("dask"), 2)
    yield c
    c.stop()


def collhub(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or _env(),
        timeout=timeout,
    )


PIPELINE = """\
version: 1
matrix:
  size: [65536, 1048576]
  network: ["ring:4", "switch:4"]
sources:
  ring: {{producer: hub.ring, params: {{collective: allreduce, ranks: 4}}}}
  direct: {{producer: hub.direct, params: {{collective: allreduce, ranks: 4}}}}
consumers:  # wait first: a unit that sleeps then has a job to start (a mkdir in the run directory)
  wait: {{use: slow.wait, params: {{size: "${{size}}", seconds: {seconds}, mark: "{mark}"{extra}}}}}
  sim: {{use: hub.simulate, params: {{network: "${{network}}", size: "${{size}}", mode: aware}}}}
"""


def _pipeline(tmp: Path, seconds: float = 0.0, extra: str = "", name: str = "p") -> tuple[Path, Path]:
    mark = tmp / f"marks-{name}"
    mark.mkdir()
    f = tmp / f"{name}.yaml"
    f.write_text(PIPELINE.format(seconds=seconds, mark=mark, extra=extra))
    return f, mark


def _rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in doc["rows"]]


def test_rows_on_a_cluster_and_a_local_cluster_equal_a_local_run(cluster: Cluster, tmp_path: Path) -> None:
    f, _ = _pipeline(tmp_path)
    before = {k for per_worker in cluster.algorithm_arrivals().values() for k in per_worker}  # earlier tests'
    runs = {}
    for name, args in {
        "local": ["--jobs", "1"],
        "remote": ["--executor", "dask", "--scheduler", cluster.address],
        "localcluster": ["--executor", "dask", "--jobs", "2"],
    }.items():
        proc = collhub("run", str(f), "--out", str(tmp_path / name), "--format", "json", *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout)
    # 2 sources x 4 points x 2 consumers, every row ok, each algorithm written once.
    assert len(runs["local"]["rows"]) == 16 and all(r["status"] == "ok" for r in runs["local"]["rows"])
    assert _rows(runs["remote"]) == _rows(runs["local"])
    assert _rows(runs["localcluster"]) == _rows(runs["local"])
    assert runs["remote"]["jobs"] == 2  # the cluster's two worker threads
    # Each distinct algorithm reached each worker at most once (computed there or copied from a
    # peer), and as its own task, not inside every unit: 2 algorithms, 8 consume units.
    held = {w: {k: n for k, n in keys.items() if k not in before} for w, keys in cluster.algorithm_arrivals().items()}
    assert all(n == 1 for per_worker in held.values() for n in per_worker.values()), held
    assert len({k for per_worker in held.values() for k in per_worker}) == 2, held
    for name in runs:
        assert sorted(p.name for p in (tmp_path / name / "algorithms").iterdir()) == sorted(
            a["dir"].split("/")[-1] for a in runs["local"]["algorithms"]
        )
        wait_row = next(r for r in runs[name]["rows"] if r["component"] == "slow.wait")
        report = tmp_path / name / wait_row["artifacts"]["report"]
        assert report.read_text().split()[1] == "65536"
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or p.name.startswith(".collhub-dask-probe")]


def test_a_step_that_fails_is_reported_once_with_its_plugin(cluster: Cluster, tmp_path: Path) -> None:
    f, mark = _pipeline(tmp_path, extra=", fail_at: 1048576")
    proc = collhub(
        "run", str(f), "--out", str(tmp_path / "r"), "--executor", "dask", "--scheduler", cluster.address, cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    # Either source's failure may come back first: units run in parallel.
    assert re.match(r"error: consumer 'wait' \(slow\.wait\) on source '(ring|direct)' at point size=1048576,", lines[0])
    assert "SimulationError" in lines[0] and "slow.wait refuses 1048576 bytes" in lines[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "r").exists()
    # Recorded, not retried: each failing job ran once (2 sources x 2 networks at that size).
    f.write_text(f.read_text() + "on_error: continue\n")
    for p in mark.iterdir():
        p.unlink()
    proc = collhub(
        "run",
        str(f),
        "--out",
        str(tmp_path / "c"),
        "--format",
        "json",
        "--executor",
        "dask",
        "--scheduler",
        cluster.address,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    failed = [r for r in json.loads(proc.stdout)["rows"] if r["status"] == "failed"]
    assert [(r["source"], r["component"], r["point"]["size"]) for r in failed] == [
        ("ring", "slow.wait", 1048576)
    ] * 2 + [("direct", "slow.wait", 1048576)] * 2
    assert {r["error"] for r in failed} == {"SimulationError: slow.wait refuses 1048576 bytes"}
    assert sum(1 for p in mark.iterdir() if p.name.split("-")[1] == "1048576") == 4


def test_a_worker_killed_mid_run_loses_only_its_units(tmp_path: Path) -> None:
    c = _cluster(tmp_path, 2)
    try:
        f, mark = _pipeline(tmp_path, seconds=1.0)
        cmd = [
            sys.executable,
            "-m",
            "hub.cli",
            "run",
            str(f),
            "--out",
            str(tmp_path / "r"),
            "--format",
            "json",
            "--executor",
            "dask",
            "--scheduler",
            c.address,
        ]
        run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env())
        victim = c.workers[1]
        deadline = time.monotonic() + START_TIMEOUT
        while not any(p.name.startswith(f"{victim.pid}-") for p in mark.iterdir()):  # it is running a unit
            assert time.monotonic() < deadline and run.poll() is None, run.stderr.read() if run.stderr else ""
            time.sleep(0.02)
        os.kill(victim.pid, signal.SIGKILL)
        out, err = run.communicate(timeout=90)
        assert run.returncode == 0, err
        rows = json.loads(out)["rows"]
        assert len(rows) == 16 and all(r["status"] == "ok" for r in rows)
        survivor = str(c.workers[0].pid)
        starts = [p.name.split("-")[0] for p in mark.iterdir()]
        # The killed worker started at least one unit; the survivor ran the rest, some of them again.
        assert str(victim.pid) in starts and starts.count(survivor) >= 1
        assert len(starts) > 8  # 8 slow.wait jobs, plus those the killed worker had started
    finally:
        c.stop()


def test_unreachable_scheduler_is_exit_5_in_bounded_time(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    f, _ = _pipeline(tmp_path)
    start = time.monotonic()
    proc = collhub(
        "run",
        str(f),
        "--out",
        str(tmp_path / "r"),
        "--executor",
        "dask",
        cwd=tmp_path,
        env=_env(COLLHUB_DASK_SCHEDULER=f"tcp://127.0.0.1:{port}", COLLHUB_DASK_CONNECT_TIMEOUT="2"),
    )
    assert proc.returncode == 5, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port} within 2 s")
    assert lines[-1].startswith("hint: start one (`dask scheduler`)") and len(lines) == 2
    assert time.monotonic() - start < 30
    assert not (tmp_path / "r").exists() and not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_scheduler_without_the_dask_executor_is_a_usage_error(tmp_path: Path) -> None:
    f, _ = _pipeline(tmp_path)
    proc = collhub("run", str(f), "--scheduler", "tcp://127.0.0.1:1", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "error: --scheduler needs --executor dask",
        "hint: add --executor dask, or drop --scheduler",
    ]


def test_a_scheduler_without_workers_then_a_worker_without_a_plugin(tmp_path: Path) -> None:
    c = Cluster(tmp_path)
    try:
        c.start_scheduler()
        f, mark = _pipeline(tmp_path)
        args = ("run", str(f), "--out", str(tmp_path / "r"), "--executor", "dask", "--scheduler", c.address)
        empty = collhub(*args, cwd=tmp_path, env=_env(COLLHUB_DASK_CONNECT_TIMEOUT="1"))
        c.add_worker(with_plugin=False)
        c.wait_for_workers(1)
        proc = collhub(*args, cwd=tmp_path)
    finally:
        c.stop()
    assert empty.returncode == 5, empty.stderr
    assert empty.stderr.splitlines() == [
        f"error: the Dask scheduler at {c.address} has no workers (waited 1 s)",
        f"hint: start workers: dask worker {c.address}",
    ]
    assert proc.returncode == 4, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("error: Dask worker tcp://127.0.0.1:")
    assert lines[0].endswith("lacks plugin collhub_fixture_slow (component slow.wait, needed by this run)")
    assert lines[1] == "hint: install it on every worker (pip install collhub_fixture_slow==0.1.0), as on this client"
    assert not list(mark.iterdir()) and not (tmp_path / "r").exists()


def test_without_dask_installed_the_hint_names_the_extra(tmp_path: Path) -> None:
    # Dask is installed here; the child process hides it (None in sys.modules fails the import).
    f, _ = _pipeline(tmp_path)
    code = (
        "import sys; sys.modules['distributed'] = None; from hub.cli import main; "
        f"sys.argv = ['collhub', 'run', {str(f)!r}, '--executor', 'dask']; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=90
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("error: --executor dask needs Dask distributed, which is not installed")
    assert lines[1] == "hint: pip install 'collhub[dask]'"


def _assert_kept_incomplete(tmp_path: Path) -> None:
    """An interrupted run leaves no temporary directory, only the run marked INCOMPLETE (resumable)."""
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert (tmp_path / "r" / "INCOMPLETE").is_file() and not (tmp_path / "r" / "results.json").exists()


def _interrupt_once_started(tmp_path: Path, f: Path, mark: Path, *executor_args: str) -> tuple[int, str]:
    """``collhub run`` on Dask, SIGINT as soon as a unit has started: (exit code, stderr)."""
    cmd = [sys.executable, "-m", "hub.cli", "run", str(f), "--out", str(tmp_path / "r"), *executor_args]
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env())
    deadline = time.monotonic() + START_TIMEOUT
    while not list(mark.iterdir()):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.02)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    return run.returncode, err


def test_interrupt_stops_the_local_cluster_and_leaves_nothing_running(tmp_path: Path) -> None:
    f, mark = _pipeline(tmp_path, seconds=5)
    rc, err = _interrupt_once_started(tmp_path, f, mark, "--executor", "dask", "--jobs", "1")
    assert rc == 130, err
    assert "error: interrupted" in err.splitlines() and "Traceback" not in err, err
    _assert_kept_incomplete(tmp_path)
    for pid in {int(p.name.split("-")[0]) for p in mark.iterdir()}:  # the local cluster's workers are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_interrupt_on_a_cluster_waits_for_running_units_then_cleans_up(cluster: Cluster, tmp_path: Path) -> None:
    # Dask cannot stop a running task: the run cancels the rest, waits for the running ones to
    # end (they write into the run's directory), and only then marks that directory incomplete.
    f, mark = _pipeline(tmp_path, seconds=2)
    rc, err = _interrupt_once_started(tmp_path, f, mark, "--executor", "dask", "--scheduler", cluster.address)
    assert rc == 130 and err.splitlines()[0] == "error: interrupted", err
    started = len(list(mark.iterdir()))
    time.sleep(2.5)  # longer than a unit: nothing of this run may still be going
    _assert_kept_incomplete(tmp_path)
    assert len(list(mark.iterdir())) == started < 8


def test_probe_worker_reports_an_unseen_run_directory(tmp_path: Path) -> None:
    # The function each worker runs for the check; a worker on another filesystem reads no file
    # at the client's path, which is what a missing path is here.
    probe = tmp_path / "probe"
    probe.write_text("token")
    spec = {"autoload": True, "plugins": []}
    assert probe_worker(str(probe), "token", spec, ["hub.ring"])["sees"] is True
    assert probe_worker(str(probe), "other", spec, [])["sees"] is False
    assert probe_worker(str(tmp_path / "absent"), "token", spec, [])["sees"] is False
    assert probe_worker(None, "", spec, ["hub.ring", "nope.x"])["missing"] == ["nope.x"]
