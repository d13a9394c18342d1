"""Where a run's units execute: serially, in local worker processes, or on a Dask cluster.

An executor takes the list of unit dicts the runner planned (see :mod:`hub.pipeline._run.unit`) and yields
``(index, result)`` pairs as units complete, in any order; the runner restores file order.
``close()`` waits for a clean end, ``kill()`` stops at once (Ctrl-C, a failed step).
:func:`make_executor` is the one place an executor kind is chosen; the Dask executor lives in
:mod:`hub.pipeline._run.dask_cluster` and is imported only when chosen (Dask is an optional extra).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol

from ...errors import UsageError
from . import interrupt as _interrupt
from .interrupt import Interrupts, worker_init
from .unit import run_unit

__all__ = ["Executor", "LocalExecutor", "EXECUTORS", "make_executor"]

#: The executor kinds ``collhub run --executor`` accepts.
EXECUTORS = ("local", "dask")


class Executor(Protocol):
    """What the runner needs from an executor."""

    workers: int

    def map(self, units: list[dict[str, Any]], interrupts: Interrupts) -> Iterator[tuple[int, dict[str, Any]]]: ...

    def close(self) -> None: ...

    def kill(self) -> None: ...


def make_executor(kind: str, workers: int, *, scheduler: str | None = None) -> Executor:
    """The executor of ``kind`` with ``workers`` workers (``scheduler``: a cluster address).

    The executor's ``workers`` may differ from the request: a Dask cluster has its own size."""
    if kind == "local":
        if scheduler is not None:
            raise UsageError("--scheduler needs a cluster executor", hint="add --executor dask, or drop --scheduler")
        return LocalExecutor(workers)
    if kind == "dask":
        from .dask_cluster import DaskExecutor

        return DaskExecutor(workers, scheduler)
    raise UsageError(f"unknown executor {kind!r}", hint=f"choose one of: {', '.join(EXECUTORS)}")


class LocalExecutor:
    """Runs units in order (serial) or in a process pool; yields results as they complete."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.executor: ProcessPoolExecutor | None = (
            ProcessPoolExecutor(workers, initializer=worker_init) if workers > 1 else None
        )

    def map(self, units: list[dict[str, Any]], interrupts: Interrupts) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.executor is None:
            for i, unit in enumerate(units):
                yield i, run_unit(unit)
                interrupts.check()
            return
        # submit() forks the workers; a KeyboardInterrupt raised inside an at-fork hook would be
        # swallowed ("Exception ignored") and could leave a lock held: defer signals meanwhile.
        with interrupts.critical():
            futures: dict[Future[dict[str, Any]], int] = {
                self.executor.submit(run_unit, u): i for i, u in enumerate(units)
            }
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            interrupts.check()
            for fut in done:
                yield futures[fut], fut.result()

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True)

    def kill(self) -> None:
        """Stop at once: kill the workers and wait until they are gone (they may be writing into
        the temporary run directory, which is removed next)."""
        if self.executor is None:
            return
        # ProcessPoolExecutor has no public way to stop running work; its worker table has been
        # `_processes` (pid -> Process) since Python 3.2.
        procs = list((getattr(self.executor, "_processes", None) or {}).values())
        for proc in procs:
            try:
                proc.kill()
            except (OSError, ValueError):
                pass
        # shutdown() forgets the manager thread and the result queue: take them first.
        thread = getattr(self.executor, "_executor_manager_thread", None)
        writer = getattr(getattr(self.executor, "_result_queue", None), "_writer", None)
        for proc in procs:
            proc.join(10)
        self.executor.shutdown(wait=False, cancel_futures=True)
        if procs:
            _interrupt.WORKERS_KILLED = True
        _unstick_manager(thread, writer)


def _unstick_manager(thread: Any, writer: Any) -> None:
    """Let the executor's manager thread end after its workers were killed.

    A worker killed while writing its result leaves half a message in the result pipe, whose
    write end this process also holds: the manager thread would wait in ``recv()`` for the rest
    forever, and interpreter exit joins that thread (a run "still going 60 s later"). Feeding
    the pipe filler bytes completes the message; it fails to unpickle, the manager marks the pool
    broken and exits. Private attributes (stable since Python 3.9), hence best effort.
    """
    if thread is None or writer is None:
        return
    thread.join(0.05)
    if not thread.is_alive():
        return
    try:
        fd = writer.fileno()
        os.set_blocking(fd, False)
    except (OSError, ValueError):
        return
    filler = b"\0" * 65536
    deadline = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < deadline:
        try:
            os.write(fd, filler)
        except BlockingIOError:
            pass
        except OSError:
            return
        thread.join(0.01)
