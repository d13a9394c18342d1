"""What one rank process does: join the process group, then for every job and size run the
replay (warm-up, check, timed iterations) and the native collective the same way.

torch is imported here, inside the rank, never at collhub start-up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hub.sim import algbw_GBps, busbw_factor

from ._geometry import geometry
from ._memory import Buffers, expected, fill, make_buffers
from ._plan import Plan

__all__ = ["Job", "RankConfig", "run_rank"]

_SENTINEL = 10000  # fills the output before a check: never a value any checked output can hold
#: collectives whose native call is in place by construction (one buffer): they get an in-place native column
_IN_PLACE_NATIVE = ("allreduce", "broadcast", "reduce")


@dataclass(frozen=True)
class RankConfig:
    backend: str  # gloo | nccl
    init_method: str
    timeout: float
    local_rank: int = 0
    rounds: bool = False  # NCCL's round schedule (always on NCCL; on gloo it tests that path on CPU)


@dataclass
class Job:
    """One algorithm to replay at several sizes (and the settings that shape every case)."""

    plan: Plan
    sizes: list[int]
    dtype: str = "float32"
    op: str = "sum"
    modes: list[bool] = field(default_factory=lambda: [False, True])  # inplace flags
    iters: int = 20
    warmup: int = 1
    check: bool = True
    native: bool = True
    repeat: int = 1  # interleaved timing rounds (replay modes and native), median reported


def _native(dist: Any, coll: str, send: Any, recv: Any, root: int, rop: Any) -> None:
    if coll == "allreduce":
        recv.copy_(send)
        dist.all_reduce(recv, op=rop)
    elif coll == "allgather":
        dist.all_gather_into_tensor(recv, send)
    elif coll == "reducescatter":
        dist.reduce_scatter_tensor(recv, send, op=rop)
    elif coll == "alltoall":
        dist.all_to_all_single(recv, send)
    elif coll == "broadcast":
        recv.copy_(send)
        dist.broadcast(recv, src=root)
    elif coll == "reduce":
        recv.copy_(send)
        dist.reduce(recv, dst=root, op=rop)


class _Rank:
    def __init__(self, torch: Any, dist: Any, rank: int, world: int, cfg: RankConfig) -> None:
        self.torch, self.dist, self.rank, self.world, self.cfg = torch, dist, rank, world, cfg
        self.cuda = cfg.backend == "nccl"
        self.device = torch.device("cuda", cfg.local_rank) if self.cuda else torch.device("cpu")

    # -- timing and reductions over ranks ------------------------------------------------
    def _clock(self) -> float:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def _timed(self, body: Any, iters: int) -> float:
        """Seconds per iteration, max over ranks, measured after a barrier (CUDA events on GPU)."""
        torch, dist = self.torch, self.dist
        dist.barrier()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(self.device)
            start.record()
            for _ in range(iters):
                body()
            end.record()
            torch.cuda.synchronize(self.device)
            secs = start.elapsed_time(end) / 1000.0 / iters
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                body()
            secs = (time.perf_counter() - t0) / iters
        t = torch.tensor([secs], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def _gather_ints(self, values: list[int]) -> list[list[int]]:
        """Every rank's ``values`` (same length everywhere), via one SUM all-reduce."""
        torch = self.torch
        t = torch.zeros((self.world, len(values)), dtype=torch.int64, device=self.device)
        t[self.rank] = torch.tensor(values, dtype=torch.int64, device=self.device)
        self.dist.all_reduce(t)
        return t.cpu().tolist()

    # -- one case ------------------------------------------------------------------------
    def _check(self, out: Any, want: Any | None, ce: int, c: int) -> list[int]:
        """[wrong elements, first wrong output chunk, its element] for this rank (-1: none)."""
        if want is None:
            return [0, -1, -1]
        bad = (out != want).flatten()
        wrong = int(bad.sum().item())
        if not wrong:
            return [0, -1, -1]
        i = int(bad.nonzero()[0].item())
        count = out.shape[1]
        unit, e = divmod(i, count)
        return [wrong, unit * c + e // ce, i]

    def run_job(self, job: Job, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
        """Every size of ``job``: set up, warm up and check each mode and the native collective,
        then time them in ``repeat`` interleaved rounds (median), so that a machine whose load
        drifts treats replay and native alike."""
        import statistics

        torch, dist, plan = self.torch, self.dist, job.plan
        dtype = getattr(torch, job.dtype)
        rop = getattr(dist.ReduceOp, {"sum": "SUM", "prod": "PRODUCT", "min": "MIN", "max": "MAX"}[job.op])
        rows: list[dict[str, Any]] = []
        say = progress or (lambda _text: None)
        for n, size in enumerate(job.sizes, 1):
            where = f"{plan.name}, size {_human(size)} ({n}/{len(job.sizes)})"
            say(f"{where}: setting up and checking")
            geo = geometry(plan, size, job.dtype)
            inputs = [fill(torch, q, plan.in_units, geo.unit, job.op, dtype, self.device) for q in range(self.world)]
            want = expected(torch, plan, self.rank, inputs, job.op)
            row: dict[str, Any] = {
                "size": geo.size,
                "requested": size,
                "count": geo.count,
                "type": job.dtype,
                "redop": job.op,
                "root": plan.root,
                "chunk_elems": geo.chunk,
            }
            bodies: dict[str, Any] = {}
            progs: list[Any] = []
            try:
                first_out = None
                for inplace in job.modes:
                    key = "ip" if inplace else "oop"
                    bodies[key], prog, out = self._replay_case(plan, geo, inputs, want, dtype, job, inplace, row, key)
                    progs.append(prog)
                    first_out = out if first_out is None else first_out
                if job.native:
                    bodies["native"] = self._native_case(plan, geo, inputs, want, first_out, rop, dtype, job, row)
                    if plan.collective in _IN_PLACE_NATIVE and True in job.modes:
                        bodies["native_ip"] = self._native_inplace(plan, geo, inputs, want, rop, job, row)
                times: dict[str, list[float]] = {k: [] for k in bodies}
                for r in range(job.repeat):
                    # between timed loops, never inside one: a report would be timed with the iterations
                    say(f"{where}: timing round {r + 1}/{job.repeat}, {job.iters} iterations each")
                    for key, body in bodies.items():
                        times[key].append(self._timed(body, job.iters))
            finally:
                for prog in progs:
                    prog.close()
            for key, ts in times.items():
                secs = statistics.median(ts)
                row[f"{key}_time_us"] = secs * 1e6
                factor = busbw_factor(plan.collective, self.world)
                row[f"{key}_algbw_GBps"] = algbw_GBps(geo.size, seconds=secs)
                row[f"{key}_busbw_GBps"] = row[f"{key}_algbw_GBps"] * (1.0 if factor is None else factor)
                if job.repeat > 1:
                    row[f"{key}_time_us_all"] = [t * 1e6 for t in ts]
            rows.append(row)
        say(f"{plan.name}: done")
        return rows

    def _replay_case(
        self,
        plan: Plan,
        geo: Any,
        inputs: list[Any],
        want: Any,
        dtype: Any,
        job: Job,
        inplace: bool,
        row: dict[str, Any],
        key: str,
    ) -> tuple[Any, Any, Any]:
        """Buffers and program of one mode, warmed up and checked; (timed body, program, output)."""
        from ._interp import make_program, run_gloo, run_nccl

        torch, dist = self.torch, self.dist
        rp = plan.ranks_plan[self.rank]
        bufs = make_buffers(torch, plan, rp, geo, dtype, self.device, inplace)
        prog = make_program(torch, rp, bufs.mem, geo.chunk, job.op, dtype, self.device)

        def once(bufs: Buffers = bufs, prog: Any = prog) -> None:
            for d, s in bufs.pre:
                d.copy_(s)
            if self.cuda or self.cfg.rounds:
                run_nccl(torch, dist, prog)
            else:
                run_gloo(torch, dist, prog, self.cfg.timeout)
            for d, s in bufs.post:
                d.copy_(s)

        try:
            bufs.recv.fill_(_SENTINEL)
            bufs.send.copy_(inputs[self.rank])
            for _ in range(max(job.warmup, 1)):  # touches every buffer, temporaries included
                once()
            out = None
            if job.check:
                bufs.recv.fill_(_SENTINEL)
                bufs.send.copy_(inputs[self.rank])
                once()
                mine = self._check(bufs.recv, want, geo.chunk, plan.chunks_per_unit)
                out = bufs.recv.clone()
                per_rank = self._gather_ints(mine)
                row[f"{key}_wrong"] = sum(r[0] for r in per_rank)
                row[f"{key}_wrong_per_rank"] = [r[0] for r in per_rank]
                row[f"{key}_first_wrong"] = [[q, r[1], r[2]] for q, r in enumerate(per_rank) if r[0]][:1]
        except BaseException:
            prog.close()
            raise
        return once, prog, out

    def _native_case(
        self,
        plan: Plan,
        geo: Any,
        inputs: list[Any],
        want: Any,
        replayed: Any,
        rop: Any,
        dtype: Any,
        job: Job,
        row: dict[str, Any],
    ) -> Any:
        """The native collective's buffers, warmed up and checked; returns its timed body."""
        torch, dist, coll = self.torch, self.dist, plan.collective
        send = inputs[self.rank].clone()
        recv = torch.full((plan.out_units, geo.unit), _SENTINEL, dtype=dtype, device=self.device)
        flat_send, flat_recv = send.view(-1), recv.view(-1)

        def once() -> None:
            _native(dist, coll, flat_send, flat_recv, plan.root, rop)

        for _ in range(max(job.warmup, 1)):
            once()
        if job.check:
            flat_recv.fill_(_SENTINEL)
            flat_send.copy_(inputs[self.rank].view(-1))
            once()
            got = flat_recv.view(plan.out_units, geo.unit)
            mine = self._check(got, want, geo.chunk, plan.chunks_per_unit)
            differ = 0 if replayed is None or want is None else int((replayed != got).sum().item())
            per_rank = self._gather_ints([mine[0], differ])
            row["native_wrong"] = sum(r[0] for r in per_rank)
            row["native_mismatch"] = sum(r[1] for r in per_rank)  # replay output != native output
        return once

    def _native_inplace(
        self, plan: Plan, geo: Any, inputs: list[Any], want: Any, rop: Any, job: Job, row: dict[str, Any]
    ) -> Any:
        """The native collective called in place (one buffer), warmed up and checked."""
        dist, coll = self.dist, plan.collective
        buf = inputs[self.rank].clone().view(-1)

        def once() -> None:
            if coll == "allreduce":
                dist.all_reduce(buf, op=rop)
            elif coll == "broadcast":
                dist.broadcast(buf, src=plan.root)
            else:
                dist.reduce(buf, dst=plan.root, op=rop)

        for _ in range(max(job.warmup, 1)):
            once()
        if job.check:
            buf.copy_(inputs[self.rank].view(-1))
            once()
            mine = self._check(buf.view(plan.out_units, geo.unit), want, geo.chunk, plan.chunks_per_unit)
            row["native_ip_wrong"] = sum(r[0] for r in self._gather_ints(mine[:1]))
        return once


def run_rank(
    rank: int, world: int, cfg: RankConfig, jobs: list[Job], progress: Callable[[str], None] | None = None
) -> list[list[dict[str, Any]]]:
    """Join the group, run every job, leave the group; the rows are the same on every rank.
    ``progress(text)`` is called at every step of every size (what runs now; for spawned ranks
    also the parent's liveness signal)."""
    import warnings

    import torch
    import torch.distributed as dist

    # torch 2.13 renamed all_gather_into_tensor/reduce_scatter_tensor; the old names are documented back to 2.4
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed")
    torch.set_num_threads(1)  # ranks outnumber cores: intra-op threads only fight each other
    if cfg.backend == "nccl":
        torch.cuda.set_device(cfg.local_rank)
    kwargs: dict[str, Any] = {
        "backend": cfg.backend,
        "rank": rank,
        "world_size": world,
        "timeout": timedelta(seconds=cfg.timeout),
    }
    if cfg.init_method != "env://":
        kwargs["init_method"] = cfg.init_method
    if cfg.backend == "nccl":
        kwargs["device_id"] = torch.device("cuda", cfg.local_rank)
    owned = not dist.is_initialized()  # inside a user's own launch the group may exist already: reuse it
    if owned:
        dist.init_process_group(**kwargs)
    elif dist.get_world_size() != world:
        raise RuntimeError(f"the existing process group has {dist.get_world_size()} ranks, the replay needs {world}")
    try:
        # a collective first: batch_isend_irecv must not be the group's first call on NCCL
        dist.barrier()
        me = _Rank(torch, dist, rank, world, cfg)
        rows = [me.run_job(job, progress) for job in jobs]
        dist.barrier()  # nobody tears the group (and rank 0's store) down while a peer still uses it
        return rows
    finally:
        if owned:
            dist.destroy_process_group()


def spawned_main(rank: int, world: int, cfg: RankConfig, jobs: list[Job], report: Any, parent: int) -> None:
    """Entry point of a spawned rank: dies with its parent, reports on ``report``."""
    from ._interp import Hang

    _die_with_parent(parent)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        beat = (lambda text: report.put(("progress", rank, text))) if rank == 0 else None
        rows = run_rank(rank, world, cfg, jobs, beat)
    except Hang as exc:
        report.put(("hang", rank, exc.waiting))
        os._exit(3)  # waiter threads are stuck in gloo: do not wait for them
    except BaseException as exc:  # report anything; the parent turns it into one line
        report.put(("error", rank, f"{type(exc).__name__}: {exc}"))
        os._exit(1)
    report.put(("ok", rank, rows if rank == 0 else None))
    os._exit(0)  # skip interpreter teardown (daemon threads, gloo) once the report is out


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphans on a crash)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _human(size: int) -> str:
    """``1MiB``, ``12KiB``, ``100B``: the size as nccl-tests' -b/-e spell it, exact or in bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size}B"
