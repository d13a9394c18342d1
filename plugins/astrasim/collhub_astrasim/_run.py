"""``astrasim.run``: bundle, run the user's ASTRA-sim binary, parse its report into a Result."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from hub.chakra import Algorithm, Collective, NodeType, Workload
from hub.errors import ExternalToolError, UsageError
from hub.sim import algbw_GBps, busbw_factor

from ._bundle import Bundle, BundleOptions, _dims_for, _out_path, _rel, build_bundle, parse_size
from ._parse import RunReport, parse_output

__all__ = ["ENV_BINARY", "RunParams", "consume_run", "infer_backend", "resolve_binary", "run_binary"]

#: Environment variable naming the ASTRA-sim binary when the ``binary`` parameter is not set.
ENV_BINARY = "COLLHUB_ASTRASIM_BIN"
_BINARY_OF = {"aware": "AstraSim_Analytical_Congestion_Aware", "unaware": "AstraSim_Analytical_Congestion_Unaware"}


def _hint_binary(backend: str = "auto") -> str:
    """Where to point collhub, naming the binary of the backend asked for (either when any will do)."""
    name = _BINARY_OF.get(backend)
    what = f"/path/to/{name}" if name else " or ".join(f"/path/to/{n}" for n in _BINARY_OF.values())
    return f"build ASTRA-sim and set {ENV_BINARY}={what} (or pass --set binary=...)"


_HINT_BINARY = _hint_binary()


class RunParams(BundleOptions):
    """Parameters of ``astrasim.run`` (everything ``astrasim.bundle`` takes, plus the process)."""

    backend: Literal["auto", "aware", "unaware", "any"] = Field(  # type: ignore[assignment]
        default="auto",
        description="auto: from the binary's name (..._Congestion_Aware / ..._Congestion_Unaware); aware refuses "
        "multi-dim networks",
    )
    binary: str | None = Field(default=None, description=f"ASTRA-sim analytical binary; default ${ENV_BINARY}")
    timeout: float = Field(default=600.0, gt=0, description="seconds before the run is killed")
    out: str | None = Field(
        default=None, description="bundle directory (default: a temporary one, removed after the run)"
    )
    keep: bool = Field(
        default=False,
        description="without out: keep the bundle, in a fresh directory of the run "
        "directory (named in the result's artifacts)",
    )


def resolve_binary(binary: str | None, backend: str = "auto") -> Path:
    """The binary to run: the parameter, else ``$COLLHUB_ASTRASIM_BIN``; a bare name is looked up on PATH."""
    value = binary or os.environ.get(ENV_BINARY, "")
    if not value:
        raise ExternalToolError("no ASTRA-sim binary given", hint=_hint_binary(backend))
    path = Path(value).expanduser()
    if os.sep not in value and not path.exists():
        found = shutil.which(value)
        if found:
            path = Path(found)
    if not path.is_file():
        raise ExternalToolError(f"ASTRA-sim binary not found: {value}", hint=_hint_binary(backend))
    if not os.access(path, os.X_OK):
        raise ExternalToolError(f"ASTRA-sim binary is not executable: {path}", hint=f"chmod +x {path}")
    # absolute, not resolved: a link's own name says the backend (a link named
    # AstraSim_Analytical_Congestion_Aware to collhub-astra-sim runs the drop-in as that binary)
    return path.absolute()


def infer_backend(binary: Path, requested: str) -> str:
    """``aware``/``unaware`` from the binary's name; an explicit choice must agree with it."""
    name = binary.name.lower()
    inferred = "unaware" if "unaware" in name else "aware" if "aware" in name else None
    if requested == "auto":
        return inferred or "any"
    if inferred and requested in ("aware", "unaware") and requested != inferred:
        raise UsageError(
            f"backend={requested} but the binary {binary.name} is the congestion-{inferred} one",
            hint="drop backend= to take it from the binary, or pass the other binary",
        )
    return requested


def _tail(text: str, lines: int = 15) -> str:
    kept = [ln for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the whole process group (the binary and anything it started), then reap."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=grace)
            # the leader is gone; members that ignored SIGTERM still get SIGKILL next round
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_binary(binary: Path, args: list[str], cwd: Path, timeout: float) -> tuple[str, Path, float]:
    """Run ``binary args`` in ``cwd`` in a new process group; return (stdout, stdout file, seconds).

    stdout and stderr go to files under ``cwd/log`` (no pipe can fill up and stall the child).
    Raises :class:`ExternalToolError` on a non-zero exit, a signal, or the timeout.
    """
    log_dir = cwd / "log"
    log_dir.mkdir(exist_ok=True)
    out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                [str(binary), *args], cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except OSError as exc:
            raise ExternalToolError(
                f"cannot start ASTRA-sim binary {binary}: {exc.strerror or exc}", hint=_HINT_BINARY
            ) from exc
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise ExternalToolError(
                f"ASTRA-sim ({binary.name}) did not finish within the timeout of {timeout:g} s; its process group was "
                "killed",
                hint=f"raise timeout= or check the bundle in {cwd} (a deadlocked custom ET never ends)",
            ) from None
        except BaseException:  # Ctrl-C and friends: never leave the simulator running
            _kill_group(proc)
            raise
        else:
            try:  # reap helpers the binary may have left behind in its group
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    seconds = time.monotonic() - start
    stdout = out_path.read_text(errors="replace")
    if rc != 0:
        err_text = err_path.read_text(errors="replace")
        err_log = log_dir / "err.log"
        if err_log.is_file():
            err_text += "\n" + err_log.read_text(errors="replace")
        what = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
        detail = _tail(err_text) or _tail(stdout) or "no output"
        raise ExternalToolError(f"ASTRA-sim ({binary.name}) {what}: {detail}", hint=f"logs in {log_dir}")
    return stdout, out_path, seconds


def _report(stdout: str, log_dir: Path, ranks: int, binary: Path) -> tuple[RunReport, Path]:
    report = parse_output(stdout)
    source = log_dir / "stdout.txt"
    if not report.ranks and (log_dir / "log.log").is_file():  # builds that log only to the file
        report = parse_output((log_dir / "log.log").read_text(errors="replace"))
        source = log_dir / "log.log"
    if not report.ranks:
        raise ExternalToolError(
            f"ASTRA-sim ({binary.name}) exited normally but reported no 'sys[i] finished, T cycles' line",
            hint=f"is it an ASTRA-sim analytical binary? output: {_tail(stdout, 5) or 'none'}",
        )
    missing = [i for i in range(ranks) if i not in report.ranks]
    if missing:
        raise ExternalToolError(
            f"ASTRA-sim ({binary.name}): only {len(report.ranks)} of {ranks} ranks finished (missing sys "
            f"{missing[:8]})",
            hint="a custom collective whose sends and receives do not match never completes on some ranks",
        )
    return report, source


def _collective_size(obj: Algorithm | Workload, bundle: Bundle) -> tuple[Collective | None, int | None]:
    if isinstance(obj, Algorithm):
        return bundle.collective, bundle.size
    kinds = {(n.collective, n.comm_size) for nodes in obj.ranks for n in nodes if n.type == NodeType.COLL}
    if len(kinds) != 1:
        return None, None  # several collectives: a per-collective bandwidth is not defined
    coll, size = kinds.pop()
    if coll is None or size is None:
        return None, None
    return coll, size * bundle.ranks if coll is Collective.ALLGATHER else size


def consume_run(obj: Algorithm | Workload, params: RunParams, ctx: Any) -> Any:
    """Consumer ``astrasim.run``."""
    from hub import Result

    binary = resolve_binary(params.binary, params.backend)
    backend = infer_backend(binary, params.backend)
    size = parse_size(params.size) if params.size is not None else None
    temporary: Path | None = None
    if params.out is not None:
        out = _out_path(params.out, ctx)
    elif params.keep:
        key = f"{params.network}|{size}|{params.target}|{backend}|" + (
            obj.content_hash() if isinstance(obj, Algorithm) else str(obj.node_count())
        )
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", (obj.name if isinstance(obj, Algorithm) else obj.name) or "workload")
        out = _out_path(f"astrasim-{label}-{hashlib.sha256(key.encode()).hexdigest()[:10]}", ctx)
    else:
        # one bundle per call adds up (a 76-point sweep left 76 directories behind): by default it
        # lives in a temporary directory for the run only
        temporary = Path(tempfile.mkdtemp(prefix="collhub-astrasim-"))
        out = temporary / "bundle"
    try:
        bundle = build_bundle(
            obj,
            out=out,
            dims=_dims_for(params.network),
            size=size,
            algorithm_for=params.algorithm_for,
            target=params.target,
            backend=backend,
            system=params.system,
            overwrite=True,
            ctx=ctx,
            network_label=params.network,
        )
        stdout, _, seconds = run_binary(binary, bundle.args(), out, params.timeout)
        report, source = _report(stdout, out / "log", bundle.ranks, binary)
    except ExternalToolError as exc:
        if temporary is not None and (out / "log").is_dir():  # ASTRA-sim ran and failed: its logs are the clue
            exc.hint = f"{exc.hint + '; ' if exc.hint else ''}the bundle is kept in {out} (remove it when done)"
        elif temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    except BaseException:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    if temporary is not None:
        shutil.rmtree(temporary, ignore_errors=True)
    time_ns = report.time_ns
    coll, coll_size = _collective_size(obj, bundle)
    metrics: dict[str, Any] = {
        "time_ns": time_ns,
        "time_us": time_ns / 1000.0,
        "algbw_GBps": None,
        "busbw_GBps": None,
        "exposed_comm_ns": report.exposed_comm_ns,
        "ranks": bundle.ranks,
        "size": coll_size,
        "backend": backend,
    }
    predicted = bundle.predicted_ns.get(backend if backend in ("aware", "unaware") else "unaware")
    if isinstance(predicted, int):
        # the custom-collective path is exactly modelled: any difference is worth a look
        metrics["predicted_ns"] = predicted
        metrics["matches_prediction"] = predicted == time_ns
    if coll is not None and coll_size and time_ns > 0:
        algbw = algbw_GBps(coll_size, ns=time_ns)
        factor = busbw_factor(coll, bundle.ranks)
        metrics["algbw_GBps"] = algbw
        metrics["busbw_GBps"] = algbw * (1.0 if factor is None else factor)  # a custom collective: algbw
    details: dict[str, Any] = {
        "per_rank_ns": report.per_rank("finish_ns"),
        "per_rank_exposed_ns": report.per_rank("exposed_comm_ns"),
        "binary": str(binary),
        "command": [str(binary), *bundle.args()],
        "implementations": bundle.implementations,
        "wall_seconds": round(seconds, 3),
        "predicted_ns": bundle.predicted_ns,
    }
    for stat in sorted({k for r in report.ranks.values() for k in r.stats}):
        details[f"per_rank_{stat}"] = report.per_rank(stat)
    return Result(
        component="astrasim.run",
        metrics=metrics,
        details=details,
        artifacts={} if temporary is not None else {"log": _rel(source, ctx), "bundle": _rel(out, ctx)},
    )
