"""Units on a Dask ``distributed`` cluster: ``collhub run --executor dask [--scheduler ADDR]``.

What crosses the wire, and what does not:

* **Algorithms travel once per worker.** A consume unit carries its in-memory algorithm; the
  executor takes it out and makes it, once per distinct algorithm, a task of its own that just
  returns it; the units depend on that task. The client sends each algorithm once (inside that
  task, to the scheduler); the first worker that needs it runs the task, every other worker
  copies the result from a peer once and keeps it for the run. A worker that dies holding the
  only copy costs nothing: the scheduler reruns the task from the spec it holds. (``scatter``
  would lose such a copy for good, and ``scatter(broadcast=True)`` blocks for the connect
  timeout, 30 s, when a worker dies during the broadcast.)
* **The run directory is shared.** Produce units write the ET files, consume units their
  artifacts, into the run's temporary directory, by its absolute path. Workers must see that
  path (the same machine, or a shared filesystem mounted at the same place). Before the first
  unit runs, every worker is asked to read a probe file the client wrote there; a worker that
  cannot is a :class:`hub.errors.ClusterError` naming it. The same probe also checks that every
  worker provides the components the units use (:class:`hub.errors.WorkerPluginError`).

Failures: a unit returns its step's error as data (see :mod:`hub.pipeline._run.unit`), so a deterministic
failure is reported once. A worker that dies loses only the units it was running; the scheduler
runs them again elsewhere, at most ``distributed.scheduler.allowed-failures`` times per unit
(set from ``COLLHUB_DASK_RETRIES`` on the local cluster collhub starts; the scheduler's own
setting otherwise). An exception raised by the task itself (not by a step) is retried
``COLLHUB_DASK_RETRIES`` times (Dask's ``retries=``).

Dask is imported only when this executor is made, so ``collhub --help`` stays fast.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...errors import ClusterError, ClusterUnavailableError, UsageError, WorkerPluginError
from .interrupt import Interrupts
from .unit import run_unit

__all__ = ["DaskExecutor", "ENV_SCHEDULER", "ENV_CONNECT_TIMEOUT", "ENV_RETRIES", "run_dask_unit", "probe_worker"]

ENV_SCHEDULER = "COLLHUB_DASK_SCHEDULER"
ENV_CONNECT_TIMEOUT = "COLLHUB_DASK_CONNECT_TIMEOUT"
ENV_RETRIES = "COLLHUB_DASK_RETRIES"
_DEFAULT_CONNECT_TIMEOUT = 10.0
_DEFAULT_RETRIES = 2
#: How long kill() waits for units still running on a remote cluster (Dask cannot stop a
#: running task) before the runner removes the temporary directory they write into.
_KILL_WAIT_S = 30.0
_INSTALL_HINT = "pip install 'collhub[dask]'"


def _env_number(name: str, default: float, *, minimum: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= minimum:  # also refuses NaN
        raise UsageError(f"{name}={raw!r} is not a number >= {minimum:g}", hint=f"unset it (default {default:g})")
    return value


def retries() -> int:
    """The bound on reruns of one unit (``COLLHUB_DASK_RETRIES``, default 2)."""
    return int(_env_number(ENV_RETRIES, _DEFAULT_RETRIES, minimum=0))


def _unit_components(unit: dict[str, Any]) -> set[str]:
    if unit["kind"] == "produce":
        return {unit["producer"], *(t["use"] for t in unit["transforms"])}
    return {job["use"] for job in unit["jobs"]}


def _error_result(unit: dict[str, Any], message: str, hint: str, type_: str = "ClusterError") -> dict[str, Any]:
    """A unit's result carrying an error that is not a step's (the runner raises it)."""
    what = f"unit of source {unit.get('source')!r}"
    err = {"step": what, "kind": unit["kind"], "type": type_, "message": message, "hint": hint, "traceback": None}
    return {"ok": False, "error": err} if unit["kind"] == "produce" else {"rows": [], "error": err}


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def probe_worker(probe: str | None, token: str, manager: dict[str, Any], components: list[str]) -> dict[str, Any]:
    """Run on each worker: can it read ``probe`` (holding ``token``), and which ``components`` does
    its plugin manager lack? Never raises: a worker's problem is data for the client to report."""
    from .env import ManagerSpec, component_ids, manager_for

    sees = True
    if probe is not None:
        try:
            sees = Path(probe).read_text(encoding="utf-8") == token
        except OSError:
            sees = False
    try:
        have = component_ids(manager_for(ManagerSpec.from_dict(manager)))
    except Exception as exc:  # noqa: BLE001 - reported by the client, naming this worker
        return {"sees": sees, "missing": list(components), "load_error": f"{type(exc).__name__}: {exc}"}
    return {"sees": sees, "missing": [c for c in components if c not in have], "load_error": None}


def run_dask_unit(unit: dict[str, Any], algorithm: Any = None) -> dict[str, Any]:
    """The task: :func:`hub.pipeline.run_unit` on a worker, after checking the worker can do it.

    A run directory that is gone (the run was stopped) or not visible here is not written to: no
    ``mkdir`` may recreate it after the client removed it."""
    if not os.path.isdir(unit["run_dir"]):
        return _error_result(
            unit,
            f"worker {_worker_address()} cannot see the run directory {unit['run_dir']}",
            "put the run directory (--out) on a filesystem every worker mounts at the same path",
        )
    check = probe_worker(None, "", unit["manager"], sorted(_unit_components(unit)))
    if check["missing"]:
        why = f" ({check['load_error']})" if check["load_error"] else ""
        return _error_result(
            unit,
            f"worker {_worker_address()} lacks component(s) {', '.join(check['missing'])}{why}",
            "install the same collhub plugins on every worker as on the client",
            type_="WorkerPluginError",
        )
    if algorithm is not None:
        unit = {**unit, "algorithm": algorithm}
    return run_unit(unit)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while a LocalCluster starts, then hand the first to the handler that
    was there (the run's, which raises KeyboardInterrupt). Interrupted half-way, a LocalCluster
    is left to Dask's exit hooks, which print tracebacks; whole, it is closed like any other."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    old: dict[int, Any] = {
        s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        handler = old[held[0]] if held else None
        if callable(handler):
            handler(held[0], None)


def _value(obj: Any) -> Any:
    """The task that holds an algorithm on the workers (see the module docstring)."""
    return obj


def _executing_keys(keys: list[str], dask_worker: Any = None) -> list[str]:
    """Run on each worker: which of ``keys`` its threads are still executing (cancelled or not)."""
    wanted = set(keys)
    state = getattr(dask_worker, "state", None)
    return [str(ts.key) for ts in getattr(state, "executing", ()) if str(ts.key) in wanted]


class DaskExecutor:
    """Units as Dask tasks on a cluster at ``scheduler`` (or ``COLLHUB_DASK_SCHEDULER``), else on
    a ``LocalCluster`` of ``workers`` single-threaded worker processes that this executor owns."""

    def __init__(self, workers: int, scheduler: str | None = None) -> None:
        try:
            import distributed  # noqa: F401 - only to fail early, with the hint
        except ImportError as exc:
            raise UsageError(
                f"--executor dask needs Dask distributed, which is not installed ({exc})", hint=_INSTALL_HINT
            ) from exc
        address = scheduler if scheduler is not None else (os.environ.get(ENV_SCHEDULER, "").strip() or None)
        timeout = _env_number(ENV_CONNECT_TIMEOUT, _DEFAULT_CONNECT_TIMEOUT, minimum=0.1)
        self.retries = retries()
        self.workers = workers
        self.cluster: Any = None
        self.client: Any = None
        self.address = address
        self._token = uuid.uuid4().hex[:12]
        self._live: dict[Any, int] = {}
        self._algorithms: dict[str, Any] = {}
        self._checked: set[tuple[str, frozenset[str]]] = set()
        self._quiet()
        try:
            if address is None:
                self._start_local(workers, timeout)
            else:
                self._connect(address, timeout)
        except BaseException:  # a failure or Ctrl-C while starting: leave no cluster behind
            try:
                if self.client is not None:
                    self.client.close()
                if self.cluster is not None:
                    self._stop_local_workers()
                    self.cluster.close()
            finally:
                self._loud()
            raise

    def _start_local(self, workers: int, timeout: float) -> None:
        import dask
        from distributed import Client, LocalCluster

        with _signals_held(), dask.config.set({"distributed.scheduler.allowed-failures": self.retries}):
            self.cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
            self.client = Client(self.cluster, timeout=timeout)

    def _connect(self, address: str, timeout: float) -> None:
        from distributed import Client

        try:
            self.client = Client(address, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ClusterUnavailableError(
                f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {exc}",
                hint=f"start one (`dask scheduler`) and pass its address, e.g. --scheduler tcp://HOST:8786; "
                f"{ENV_CONNECT_TIMEOUT} sets the wait",
            ) from exc
        except (ValueError, TypeError) as exc:
            raise UsageError(
                f"--scheduler {address!r} is not a scheduler address: {exc}", hint="write it as tcp://HOST:PORT"
            ) from exc
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(
                f"the Dask scheduler at {address} has no workers (waited {timeout:g} s)",
                hint="start workers: dask worker " + address,
            ) from exc
        # Batches are cut for the cluster's threads, not for this machine's CPUs.
        self.workers = max(1, sum(self.client.nthreads().values()))

    def _quiet(self) -> None:
        # Dask logs worker deaths and reconnects as warnings on stderr; the run reports what matters.
        # Restored by close()/kill(): a library caller keeps its own logging.
        log = logging.getLogger("distributed")
        self._log_level = log.level
        if not os.environ.get("COLLHUB_DEBUG"):
            log.setLevel(logging.CRITICAL)

    def _loud(self) -> None:
        logging.getLogger("distributed").setLevel(self._log_level)

    def _check_workers(self, units: list[dict[str, Any]]) -> None:
        """Fail before any unit runs if a worker cannot see the run directory or lacks a component."""
        needed: set[str] = set()
        for u in units:
            needed |= _unit_components(u)
        run_dir, manager = units[0]["run_dir"], units[0]["manager"]
        key = (run_dir, frozenset(needed))
        if key in self._checked:
            return
        probe = Path(run_dir) / f".collhub-dask-probe-{self._token}"
        probe.write_text(self._token, encoding="utf-8")
        try:
            answers = self.client.run(probe_worker, str(probe), self._token, manager, sorted(needed), on_error="return")
        finally:
            probe.unlink(missing_ok=True)
        for addr, ans in sorted(answers.items()):
            if isinstance(ans, BaseException):  # e.g. collhub itself is not importable there
                raise WorkerPluginError(
                    f"Dask worker {addr} cannot run collhub: {type(ans).__name__}: {ans}",
                    hint="install collhub and its plugins on every worker, as on this client",
                )
            if not ans["sees"]:
                raise ClusterError(
                    f"Dask worker {addr} cannot see the run directory {run_dir}",
                    hint="put --out on a filesystem every worker mounts at the same path (e.g. NFS), "
                    "or run --executor dask without --scheduler (a cluster on this machine)",
                )
            if ans["missing"]:
                raise WorkerPluginError(
                    self._missing_message(addr, ans, manager), hint=self._missing_hint(ans["missing"], manager)
                )
        self._checked.add(key)

    @staticmethod
    def _distributions(manager: dict[str, Any]) -> dict[str, tuple[str, str]]:
        from .env import ManagerSpec, manager_for

        out: dict[str, tuple[str, str]] = {}
        for p in manager_for(ManagerSpec.from_dict(manager)).plugins():
            for cid in p.components:
                out[cid] = (p.distribution, p.version)
        return out

    def _missing_message(self, addr: str, ans: dict[str, Any], manager: dict[str, Any]) -> str:
        dists = self._distributions(manager)
        plugins = sorted({dists.get(c, (c.split(".")[0], ""))[0] for c in ans["missing"]})
        why = f"; its plugins failed to load: {ans['load_error']}" if ans["load_error"] else ""
        return (
            f"Dask worker {addr} lacks plugin {', '.join(plugins)} "
            f"(component {', '.join(ans['missing'])}, needed by this run){why}"
        )

    def _missing_hint(self, missing: list[str], manager: dict[str, Any]) -> str:
        dists = self._distributions(manager)
        pins = sorted({f"{d}=={v}" if v else d for d, v in (dists.get(c, (c, "")) for c in missing)})
        return f"install it on every worker (pip install {' '.join(pins)}), as on this client"

    def _submit(self, i: int, unit: dict[str, Any]) -> Any:
        algorithm = None
        if unit["kind"] == "consume" and "algorithm" in unit:
            ref = str(unit["info"]["dir"])
            algorithm = self._algorithms.get(ref)
            if algorithm is None:  # once per distinct algorithm: see the module docstring
                with warnings.catch_warnings():  # "large object in task graph": deliberate, sent once
                    warnings.simplefilter("ignore")
                    algorithm = self._algorithms[ref] = self.client.submit(
                        _value, unit["algorithm"], key=f"collhub-algorithm-{self._token}-{i}", pure=False
                    )
            unit = {k: v for k, v in unit.items() if k != "algorithm"}
        return self.client.submit(
            run_dask_unit,
            unit,
            algorithm,
            key=f"collhub-{unit['kind']}-{self._token}-{i}",
            pure=False,
            retries=self.retries,
        )

    def map(self, units: list[dict[str, Any]], interrupts: Interrupts) -> Iterator[tuple[int, dict[str, Any]]]:
        from distributed import as_completed

        if not units:
            return
        self._token = uuid.uuid4().hex[:12]  # task keys unique per map() call
        self._check_workers(units)
        futures: dict[Any, int] = {}
        for i, u in enumerate(units):
            # Units start running while later ones are still being submitted: each future is
            # known to kill() from the moment it exists (a signal waits for the submit to end).
            with interrupts.critical():
                fut = self._submit(i, u)
                futures[fut] = self._live[fut] = i
        for fut in as_completed(list(futures)):
            interrupts.check()
            i = futures[fut]
            res = self._result(fut, units[i])
            self._live.pop(fut, None)
            fut.release()
            yield i, res

    @staticmethod
    def _result(fut: Any, unit: dict[str, Any]) -> dict[str, Any]:
        from distributed import KilledWorker

        try:
            return dict(fut.result())
        except KilledWorker as exc:
            return _error_result(
                unit,
                f"lost {exc.allowed_failures + 1} workers while running it (last: "
                f"{getattr(exc.last_worker, 'address', '?')})",
                f"a unit that kills its worker (memory?) is not retried further; {ENV_RETRIES} "
                "sets the bound on collhub's own cluster",
                type_="KilledWorker",
            )
        except Exception as exc:  # noqa: BLE001 - the task itself raised (after its retries)
            return _error_result(
                unit,
                f"the Dask task failed: {type(exc).__name__}: {exc}",
                "rerun with --debug; check the worker logs",
                type_=type(exc).__name__,
            )

    def close(self) -> None:
        for fut in self._algorithms.values():
            fut.release()
        self._algorithms.clear()
        try:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        finally:
            self._loud()

    def kill(self) -> None:
        """Stop at once: cancel every unit; wait for the ones still running on a cluster we do not
        own (bounded by ``_KILL_WAIT_S``); close the client and the cluster we started (that kills
        its worker processes)."""
        live = list(self._live) + list(self._algorithms.values())
        keys = [str(f.key) for f in self._live]
        try:
            if live:
                self.client.cancel(live, force=True)
            if self.cluster is None and keys:
                deadline = time.monotonic() + _KILL_WAIT_S
                while time.monotonic() < deadline:
                    running = self.client.run(_executing_keys, keys)
                    if not any(running.values()):
                        break
                    time.sleep(0.1)
        except Exception:  # noqa: BLE001 - the cluster may already be gone; closing is what matters
            pass
        self._live.clear()
        self._algorithms.clear()
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self._stop_local_workers()
                self.cluster.close()
            self._loud()

    def _stop_local_workers(self) -> None:
        """Stop our local cluster's worker processes within ~0.5 s: a plain close would first wait
        up to 4 s for the units they are running (Nanny.close's default grace)."""
        nannies = list(getattr(self.cluster, "workers", {}).values())

        async def close_all() -> None:
            import asyncio

            await asyncio.gather(*(n.close(timeout=0.5) for n in nannies), return_exceptions=True)

        try:
            self.cluster.sync(close_all)
        except Exception:  # noqa: BLE001 - cluster.close() below still stops them, only slower
            pass
