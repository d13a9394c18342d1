"""``collhub produce | transform | consume``: run one component on the command line.

Heavy modules (numpy, pydantic, the plugin manager) are imported inside the commands so that
``collhub --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from ..errors import UsageError
from ._errors import debug_enabled
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out, table
from ._progress import progress_enabled, working
from ._scalars import NOT_PLAIN, plain_value

__all__ = ["consume", "parse_sets", "produce", "transform"]

_TIMEOUT_HELP = "Seconds before the component is stopped (exit 4). Default: no limit."
_SET_HELP = "A parameter as key=value (value parsed as YAML: 8, true, [0, 1], ring). Repeatable; dotted keys nest."


def parse_sets(items: list[str]) -> dict[str, Any]:
    """Turn ``["ranks=8", "topology.dims=[4, 2]"]`` into a params mapping (YAML-typed values)."""
    params: dict[str, Any] = {}
    for pos, item in enumerate(items, start=1):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set #{pos} {item!r} is not key=value", hint="write e.g. --set ranks=8")
        value = plain_value(raw)  # 8, allreduce, ring:8: what YAML reads them as, without YAML
        if value is NOT_PLAIN:
            value = _yaml_value(key, raw)
        node = params
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise UsageError(f"--set {key}: {part!r} was already given a plain value")
            node = child
        if parts[-1] in node:
            raise UsageError(f"--set {key} given twice")
        node[parts[-1]] = value
    return params


def _yaml_value(key: str, raw: str) -> Any:
    """One ``--set`` value through the pipeline's YAML loader, with its limits."""
    from ..errors import PipelineValidationError
    from ..pipeline._file.loader import load_value

    try:  # bounded like a pipeline file: an alias bomb or 3000 brackets in --set is refused
        return load_value(raw, f"--set {key}") if raw.strip() else ""
    except PipelineValidationError as exc:
        issue = exc.issues[0] if exc.issues else None
        detail = issue.message.removeprefix("YAML error: ") if issue else exc.message
        shown = raw if len(raw) <= 60 else raw[:60] + "..."
        raise UsageError(
            f"--set {key}: value {shown!r} is not valid YAML ({detail})",
            hint=exc.hint
            if exc.hint and "limit" in exc.hint
            else "quote strings containing ':' or '#', e.g. --set 'name=\"a:b\"'",
        ) from None


def _ctx(workdir: Path | None = None, progress: Callable[[str], None] | None = None) -> Any:
    from ..plugins import RunContext

    return RunContext(workdir=(workdir or Path.cwd()).resolve(), debug=debug_enabled(), quiet=True, progress=progress)


def _summary(obj: Any) -> dict[str, Any]:
    from ..chakra import Algorithm, algorithm_summary, summarize

    if isinstance(obj, Algorithm):
        return dict(algorithm_summary(obj.meta, obj.graphs))

    return {"text": summarize(obj)}


def _transforms_of(manager: Any, kind: str) -> list[str]:
    """The installed transforms that take a ``kind`` trace."""
    return [
        str(spec.id)
        for spec in manager.components("transform")
        if kind in getattr(spec, "inputs", frozenset({"algorithm"}))
    ]


def _write(obj: Any, prefix: str) -> list[Path]:
    from ..atomic import make_dirs
    from ..chakra import Algorithm

    make_dirs(Path(prefix).parent)
    if isinstance(obj, Algorithm):
        from ..chakra import write_algorithm

        return list(write_algorithm(obj, prefix))
    from ..chakra import write_workload  # the general message codec: workloads only

    if not getattr(obj, "name", None):  # the name in the GlobalMetadata marks the files as a workload
        obj.name = Path(prefix).name
    return list(write_workload(obj, prefix))


def _report_written(component: str, obj: Any, files: list[Path], fmt: OutputFormat, grade: Any = None) -> None:
    if fmt == OutputFormat.json:
        doc = {"component": component, "files": [str(f) for f in files], "summary": _summary(obj)}
        if grade is not None:
            from .._units import percent_of_bound

            doc["bound"] = {**grade.as_dict(), "percent_of_bound": percent_of_bound(grade.time_over_bound) or None}
        emit_json(doc)
        return
    from ..chakra import summarize

    out(summarize(obj))  # with the grade's bound and simulated lines, from the metadata
    if grade is not None and grade.skipped:
        out(f"simulated   no: {grade.skipped}")
    first = files[0] if files else "-"
    out(f"wrote {len(files)} file(s): {first}{' ...' if len(files) > 1 else ''}")


def produce(
    component: str = typer.Argument(..., metavar="ID", help="Producer id, e.g. hub.ring."),
    sets: list[str] = typer.Option([], "--set", "-s", metavar="KEY=VALUE", help=_SET_HELP),
    out_prefix: str = typer.Option(..., "--out", "-o", metavar="PREFIX", help="Write <PREFIX>.<rank>.et."),
    fmt: OutputFormat = FORMAT_OPTION,
    timeout: float | None = typer.Option(None, "--timeout", min=0.001, help=_TIMEOUT_HELP),  # noqa: UP007
) -> None:
    """Run a producer and write its algorithm (or workload) as Chakra ET files.

    Example: collhub produce hub.ring --set collective=allreduce --set ranks=8 --out out/ring
    """
    from ..plugins import manager_for

    manager = manager_for(component)
    params = parse_sets(sets)
    with working(f"{component}: producing", json_output=fmt == OutputFormat.json) as step:
        obj = manager.run_producer(component, params, _ctx(Path(out_prefix).parent), timeout=timeout)
        graded = _grade(obj, params, step)
        if graded is not None:
            obj = graded[0]
        step(f"writing {out_prefix}.<rank>.et")
        files = _write(obj, out_prefix)
    _report_written(component, obj, files, fmt, graded[1] if graded else None)


def _grade(obj: Any, params: dict[str, Any], step: Callable[[str], None]) -> tuple[Any, Any] | None:
    """An algorithm made for a network, with its certified bound and simulated time in its
    metadata (:mod:`hub.sim._bounds.grade`), and that grade; None for anything else."""
    from ..chakra import Algorithm

    if not isinstance(obj, Algorithm) or not ({"network", "topology"} & params.keys()):
        return None
    from ..sim import grade, with_grade

    step("simulating against the certified bound")
    g = grade(obj, params)
    return None if g is None else (with_grade(obj, g), g)


def transform(
    component: str = typer.Argument(..., metavar="ID", help="Transform id, e.g. hub.chunk."),
    in_prefix: str = typer.Argument(..., metavar="IN_PREFIX", help="Input trace prefix (<IN_PREFIX>.<rank>.et)."),
    out_prefix: str = typer.Argument(..., metavar="OUT_PREFIX", help="Output trace prefix."),
    sets: list[str] = typer.Option([], "--set", "-s", metavar="KEY=VALUE", help=_SET_HELP),
    fmt: OutputFormat = FORMAT_OPTION,
    timeout: float | None = typer.Option(None, "--timeout", min=0.001, help=_TIMEOUT_HELP),  # noqa: UP007
) -> None:
    """Run a transform on the trace kind it takes (an algorithm; a workload for hub.inline and
    hub.overlap) and write the result.

    Example: collhub transform hub.chunk out/ring out/ring4 --set pieces=4
    """
    from ..chakra import Algorithm, read_trace
    from ..plugins import manager_for

    manager = manager_for(component)
    spec = manager.component(component)  # unknown id fails before any file is read
    obj = read_trace(in_prefix)
    kind = "algorithm" if isinstance(obj, Algorithm) else "workload"
    inputs = getattr(spec, "inputs", frozenset({"algorithm"}))
    if kind not in inputs:
        takes = " or ".join(sorted(inputs))
        raise UsageError(
            f"{component} transforms {'an' if takes[0] in 'aeiou' else 'a'} {takes} trace, "
            f"but {in_prefix} is {'an' if kind[0] in 'aeiou' else 'a'} {kind} trace",
            hint=(
                f"{kind} transforms: " + ", ".join(_transforms_of(manager, kind))
                if _transforms_of(manager, kind)
                else f"no installed transform takes a {kind}"
            ),
        )
    with working(f"{component}: transforming {in_prefix}", json_output=fmt == OutputFormat.json) as step:
        new = manager.run_transform(component, obj, parse_sets(sets), _ctx(Path(out_prefix).parent), timeout=timeout)
        step(f"writing {out_prefix}.<rank>.et")
        files = _write(new, out_prefix)
    _report_written(component, new, files, fmt)


_SIZE_HELP = "nccl-tests -b/-e/-i and --factor: sweep the consumer's size from MIN to MAX bytes (one row per size)."
_FACTOR_HELP = (
    "nccl-tests' -f: multiply the size by this integer (default 2). Spelled --factor here: "
    "-f is --format in every collhub command."
)


def consume(
    component: str = typer.Argument(..., metavar="ID", help="Consumer id, e.g. hub.simulate."),
    prefix: str = typer.Argument(..., metavar="PREFIX", help="Trace prefix (<PREFIX>.<rank>.et)."),
    sets: list[str] = typer.Option([], "--set", "-s", metavar="KEY=VALUE", help=_SET_HELP),
    workdir: Path = typer.Option(
        Path("."),
        "--out",
        "-o",
        "--workdir",
        "-w",
        help="Directory for the consumer's artifacts (--out as everywhere; --workdir is its older name).",
    ),
    fmt: str = typer.Option(
        "table",
        "--format",
        "-f",
        metavar="[table|json]",
        help="Output format: human-readable table or JSON on stdout.",
    ),
    timeout: float | None = typer.Option(None, "--timeout", min=0.001, help=_TIMEOUT_HELP),  # noqa: UP007
    min_bytes: str | None = typer.Option(None, "--min-bytes", "-b", metavar="SIZE", help=_SIZE_HELP),  # noqa: UP007
    max_bytes: str | None = typer.Option(
        None,
        "--max-bytes",
        "-e",
        metavar="SIZE",  # noqa: UP007
        help="nccl-tests -e: the largest size (default: -b).",
    ),
    factor: str | None = typer.Option(None, "--factor", metavar="FACTOR", help=_FACTOR_HELP),  # noqa: UP007
    step: str | None = typer.Option(
        None,
        "--step-bytes",
        "-i",
        metavar="SIZE",  # noqa: UP007
        help="nccl-tests -i: add this many bytes per step instead of multiplying.",
    ),
) -> None:
    """Run a consumer on a trace and print its result (with -b/-e: one row per size).

    Example: collhub consume hub.simulate out/ring --set network=ring:8 -b 1KiB -e 1MiB --factor 2
    """
    from ..chakra import Algorithm, read_trace
    from ..plugins import manager_for

    fmt = _output_format(fmt)
    params = parse_sets(sets)
    sizes = _size_sweep(params, min_bytes, max_bytes, factor, step)
    manager = manager_for(component)
    spec = manager.component(component)
    obj = read_trace(prefix)
    kind = "algorithm" if isinstance(obj, Algorithm) else "workload"
    inputs = getattr(spec, "inputs", frozenset({"algorithm"}))
    if kind not in inputs:
        raise UsageError(f"{component} consumes {' or '.join(sorted(inputs))}, but {prefix} is a {kind} trace")
    workdir.mkdir(parents=True, exist_ok=True)
    if sizes is not None and not _sweeps_itself(spec):
        _consume_sizes(manager, component, obj, prefix, params, sizes, workdir, fmt, timeout)
        return
    if sizes is not None:  # a consumer with its own size list (replay.run) runs the sweep in one launch
        params["size"] = sizes
    with working(f"{component}: consuming {prefix}", json_output=fmt == OutputFormat.json) as show:
        # the consumer's own steps (replay.run: launch, sizes) go on the same transient line
        live = show if progress_enabled(fmt == OutputFormat.json) else None
        result = manager.run_consumer(component, obj, params, _ctx(workdir, live), timeout=timeout)
    if fmt == OutputFormat.json:
        emit_json(result.model_dump(mode="json"))
        return
    out(f"{result.component}: {prefix}")
    if result.metrics:
        # a metric that does not apply (busbw of a workload) is None: left out here, null in JSON
        out(table(["metric", "value"], [(k, _fmt(v)) for k, v in result.metrics.items() if v is not None], indent=2))
    if result.artifacts:
        out(table(["artifact", "path"], sorted(result.artifacts.items()), indent=2))
    if sizes is not None and isinstance((result.details or {}).get("table"), str):
        out(result.details["table"])
    for w in result.warnings:
        err(f"warning: {w}")


def _output_format(value: str) -> OutputFormat:
    """``--format``/``-f``; a number is nccl-tests' step factor, which collhub spells ``--factor``."""
    try:
        return OutputFormat(value.lower())
    except ValueError:
        pass
    if value.strip().isdigit():
        raise UsageError(
            f"-f {value}: -f is --format (table or json) in every collhub command",
            hint=f"nccl-tests' step factor is --factor here: -b 1K -e 1G --factor {value}",
        )
    raise UsageError(f"--format {value!r}: not an output format", hint="table or json")


def _size_sweep(
    params: dict[str, Any], min_bytes: str | None, max_bytes: str | None, factor: str | None, step: str | None
) -> list[Any] | None:
    """The sizes of ``-b/-e/-f/-i`` (through the pipeline's range grammar), or None without ``-b``/``-e``."""
    if min_bytes is None and max_bytes is None:
        if factor is not None or step is not None:
            raise UsageError(
                "--factor/-i need a size range", hint="give -b MIN (and -e MAX), e.g. -b 1K -e 1G --factor 2"
            )
        return None
    from .._ranges import range_values  # only for a sweep: a plain consume needs neither
    from ..pipeline._file.limits import limit

    if "size" in params:
        raise UsageError("give the size either with --set size=... or with -b/-e, not both")
    if factor is not None and step is not None:
        raise UsageError("give either --factor or -i (step), not both", hint="nccl-tests takes one of them too")
    start = min_bytes if min_bytes is not None else max_bytes
    spec: dict[str, Any] = {"from": start, "to": max_bytes if max_bytes is not None else start}
    if step is not None:
        spec["step"] = step
    else:
        try:
            spec["factor"] = int(factor) if factor is not None else 2
        except ValueError:
            raise UsageError(
                f"--factor {factor!r} is not an integer factor",
                hint="nccl-tests multiplies by an integer, e.g. --factor 2",
            ) from None
    try:
        return range_values("size", spec, limit("points"))
    except UsageError as exc:
        message = exc.message.replace("from", "-b", 1).replace("to (", "-e (", 1)
        raise UsageError(f"-b/-e/--factor/-i: {message}", hint=exc.hint) from None


def _sweeps_itself(spec: Any) -> bool:
    """Whether the consumer's params take a list of sizes with max_size/factor (replay.run does)."""
    try:
        fields = getattr(spec.load_params(), "model_fields", {})
    except Exception:  # noqa: BLE001 - no params model: run one call per size
        return False
    return "max_size" in fields and "factor" in fields


def _consume_sizes(
    manager: Any,
    component: str,
    obj: Any,
    prefix: str,
    params: dict[str, Any],
    sizes: list[Any],
    workdir: Path,
    fmt: OutputFormat,
    timeout: float | None,
) -> None:
    """One consumer call per size; a table row (or a JSON object) per size, as nccl-tests prints."""
    from .._units import parse_size

    results: list[Any] = []
    for size in sizes:
        with working(
            f"{component}: size {size} ({len(results) + 1} of {len(sizes)})", json_output=fmt == OutputFormat.json
        ):
            results.append(
                manager.run_consumer(component, obj, {**params, "size": size}, _ctx(workdir), timeout=timeout)
            )
    if fmt == OutputFormat.json:
        emit_json(
            {
                "component": component,
                "prefix": prefix,
                "rows": [
                    {"size": s, "size_bytes": parse_size(s), **r.model_dump(mode="json")}
                    for s, r in zip(sizes, results, strict=True)
                ],
            }
        )
        return
    names = [k for k in ("time_us", "algbw_GBps", "busbw_GBps") if any(k in r.metrics for r in results)]
    if not names:  # a consumer without the nccl-tests columns: its numeric metrics, in its order
        names = list(
            dict.fromkeys(
                k
                for r in results
                for k, v in r.metrics.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)
            )
        )[:6]
    out(f"{component}: {prefix}")
    rows = [
        (parse_size(s), s, *(_fmt(r.metrics.get(k, "")) for k in names)) for s, r in zip(sizes, results, strict=True)
    ]
    out(table(["size (B)", "size", *names], rows, indent=2))
    for s, r in zip(sizes, results, strict=True):
        for w in r.warnings:
            err(f"warning: size {s}: {w}")


def _fmt(v: Any) -> str:
    if v is None:  # a metric that does not apply to this row
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
