"""Starting the ranks: spawn local processes (torch.multiprocessing), or join a torchrun-style
launch; turn hangs and crashes into one-line errors; always reap every rank process."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hub.errors import ExternalToolError, UsageError

from ._worker import Job, RankConfig, run_rank, spawned_main

__all__ = ["LAUNCH_VARS", "free_port", "launched", "pick_backend", "replay_jobs"]

#: the variables torchrun (and most launchers) set for every process
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_STARTUP_S = 120.0  # spawn + torch import + rendezvous on a loaded 2-core machine
_GRACE_S = 5.0  # after the first failure, how long the other ranks get to report theirs


def launched() -> bool:
    """True inside a torchrun-style launch (all of :data:`LAUNCH_VARS` set)."""
    return all(os.environ.get(v) for v in LAUNCH_VARS)


def free_port() -> int:
    """A loopback port nobody listens on right now (a new one per run)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pick_backend(requested: str, local_ranks: int) -> str:
    """``auto``: nccl when every local rank can have its own GPU, else gloo."""
    if requested == "gloo":
        return "gloo"
    import torch
    import torch.distributed as dist

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    usable = gpus >= local_ranks and dist.is_nccl_available()
    if requested == "nccl" and not usable:
        raise UsageError(
            f"backend=nccl needs one GPU per local rank: {local_ranks} rank(s), {gpus} GPU(s)"
            + ("" if dist.is_nccl_available() else ", and this torch has no NCCL"),
            hint="use backend=gloo (CPU) or backend=auto",
        )
    return "nccl" if usable else "gloo"


def replay_jobs(
    jobs: list[Job],
    *,
    ranks: int | None,
    backend: str,
    timeout: float,
    schedule: str = "auto",
    progress: Callable[[str], None] | None = None,
) -> tuple[str, list[list[dict[str, Any]]]]:
    """Run ``jobs`` on ``ranks`` spawned processes, or in this process of an existing launch;
    return the backend used and each job's rows. ``progress(text)`` hears the launch and rank
    0's steps (each size, each timing round)."""
    say = progress or (lambda _text: None)
    if launched():
        world = int(os.environ["WORLD_SIZE"])
        if ranks is not None and ranks != world:
            raise UsageError(
                f"ranks={ranks} but this launch has WORLD_SIZE={world}",
                hint="drop ranks= inside torchrun, or launch that many processes",
            )
        _check_world(jobs, world)
        local = int(os.environ.get("LOCAL_RANK", "0"))
        cfg = _config(
            pick_backend(backend, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))), "env://", timeout, schedule, local
        )
        if os.environ["MASTER_ADDR"] in ("127.0.0.1", "localhost", "::1"):  # single node: pin loopback
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        from ._interp import Hang

        say(f"joining a {world}-rank {cfg.backend} launch as rank {os.environ['RANK']}")
        try:
            return cfg.backend, run_rank(int(os.environ["RANK"]), world, cfg, jobs, progress)
        except Hang as exc:
            raise ExternalToolError(
                f"replay hung: rank {exc.rank} made no progress for {timeout:g} s; waiting: "
                + "; ".join(exc.waiting[:6]),
                hint="the other ranks report their own waiting nodes",
            ) from None
    world = ranks if ranks is not None else (jobs[0].plan.ranks if jobs else 0)
    _check_world(jobs, world)
    cfg = _config(pick_backend(backend, world), f"tcp://127.0.0.1:{free_port()}", timeout, schedule)
    say(f"launching {world} {cfg.backend} ranks")
    return cfg.backend, _spawn(jobs, world, cfg, say)


def _config(backend: str, init: str, timeout: float, schedule: str, local: int = 0) -> RankConfig:
    if backend == "nccl" and schedule == "dynamic":
        raise UsageError(
            "schedule=dynamic needs tags and host-side waits, which NCCL does not have",
            hint="use schedule=auto (rounds on NCCL) or backend=gloo",
        )
    return RankConfig(backend, init, timeout, local, rounds=backend == "nccl" or schedule == "rounds")


def _check_world(jobs: list[Job], world: int) -> None:
    for job in jobs:
        if job.plan.ranks != world:
            raise UsageError(
                f"{job.plan.name} is a {job.plan.ranks}-rank algorithm but the replay has {world} rank(s)",
                hint="produce the algorithm for that many ranks, or set ranks= to match",
            )


def _spawn(jobs: list[Job], world: int, cfg: RankConfig, say: Callable[[str], None]) -> list[list[dict[str, Any]]]:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    report = ctx.SimpleQueue()
    procs = [
        ctx.Process(target=spawned_main, args=(r, world, cfg, jobs, report, os.getpid()), daemon=True)
        for r in range(world)
    ]
    rows: list[list[dict[str, Any]]] | None = None
    hangs: dict[int, list[str]] = {}
    errors: dict[int, str] = {}
    ok: set[int] = set()
    # a rank's own watchdog fires after `timeout` without progress; this bounds everything else:
    # rank 0 reports after every size, and each report extends the deadline by one case's allowance
    window = (
        _STARTUP_S
        + cfg.timeout * 2
        + max(
            (len(j.modes) + int(j.native)) * (j.iters * j.repeat + j.warmup + 2) * (0.2 + max(j.sizes) / 20e6)
            for j in jobs
        )
    )
    deadline = time.monotonic() + window
    failed_at: float | None = None
    try:
        with _main_not_reimported():
            for p in procs:
                p.start()
        while len(ok) + len(hangs) + len(errors) < world:
            now = time.monotonic()
            if now > deadline or (failed_at is not None and now > failed_at + _GRACE_S):
                break
            got = _poll(report, 0.2)
            if got is None:
                for r, p in enumerate(procs):  # a rank that died without a word (a signal)
                    if p.exitcode not in (None, 0) and r not in hangs and r not in errors and _drained(report):
                        errors[r] = _exit_text(p.exitcode)
                if errors and failed_at is None:
                    failed_at = time.monotonic()
                continue
            kind, r, payload = got
            if kind == "progress":
                deadline = time.monotonic() + window
                say(payload)
                continue
            if kind == "ok":
                ok.add(r)
                if r == 0:
                    rows = payload
            elif kind == "hang":
                hangs[r] = payload
            else:
                errors[r] = payload
            if kind != "ok" and failed_at is None:
                failed_at = time.monotonic()
    finally:
        _reap(procs)
    if hangs:
        where = "; ".join(
            f"rank {r}: " + ", ".join(w[:3]) + (" ..." if len(w) > 3 else "") for r, w in sorted(hangs.items())
        )
        raise ExternalToolError(
            f"replay hung: rank(s) {', '.join(map(str, sorted(hangs)))} made no progress for {cfg.timeout:g} s; "
            f"waiting: {where}",
            hint="every rank process was stopped; `collhub verify` checks progress",
        )
    if errors:
        r = min(errors)
        raise ExternalToolError(
            f"replay failed on rank {r}: {errors[r]}",
            hint="all rank processes were stopped" + (f"; {len(errors)} rank(s) failed" if len(errors) > 1 else ""),
        )
    if rows is None or len(ok) < world:
        missing = sorted(set(range(world)) - ok)
        raise ExternalToolError(
            f"replay did not finish: rank(s) {missing} never reported",
            hint="raise timeout=, or check the machine's load",
        )
    return rows


@contextmanager
def _main_not_reimported() -> Iterator[None]:
    """Start ranks without re-running the caller's main module in them.

    The ``spawn`` method re-imports ``__main__`` in every child (by module name or file); the
    ranks need none of it (their target lives in this package), and re-importing fails for
    ``python - <<EOF`` and re-runs unguarded scripts. multiprocessing skips it when ``__main__``
    has neither a module spec nor a file, so both are hidden while the children start.
    """
    main = sys.modules.get("__main__")
    hidden = ("__spec__", "__file__")
    saved: dict[str, Any] = {k: main.__dict__[k] for k in hidden if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


def _poll(report: Any, seconds: float) -> Any:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not report.empty():
            return report.get()
        time.sleep(0.02)
    return None


def _drained(report: Any) -> bool:
    return bool(report.empty())


def _exit_text(code: int) -> str:
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the process was killed by {name}" + (
            " (gloo aborts on a message size mismatch)" if name == "SIGABRT" else ""
        )
    return f"the process exited with status {code}"


def _reap(procs: list[Any]) -> None:
    """Terminate, then kill, then join every rank process: none outlives the run."""
    procs = [p for p in procs if p._popen is not None]  # started ones only
    for p in procs:
        if p.is_alive():
            p.terminate()
    end = time.monotonic() + 3.0
    for p in procs:
        p.join(timeout=max(0.0, end - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
