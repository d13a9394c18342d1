"""``collhub trace show | verify | convert``: inspect and convert Chakra ET traces."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from ..errors import ExitCode, FormatError, UsageError
from ._output import FORMAT_OPTION, OutputFormat, emit_json, err, out

__all__ = ["app"]

app = typer.Typer(help="Show, verify and convert Chakra ET traces.", no_args_is_help=True, rich_markup_mode=None)


@app.command("show")
def show(
    prefix: str = typer.Argument(..., metavar="PREFIX", help="Trace prefix (<PREFIX>.<rank>.et)."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Summarise a trace: collective, ranks, nodes, messages, bytes."""
    from ..chakra import Algorithm, read_trace, summarize

    obj = read_trace(prefix)
    if fmt == OutputFormat.json:
        kind = "algorithm" if isinstance(obj, Algorithm) else "workload"
        summary = obj.summary() if hasattr(obj, "summary") and callable(obj.summary) else {"text": summarize(obj)}
        emit_json({"prefix": prefix, "kind": kind, "summary": summary})
    else:
        out(summarize(obj))


@app.command("verify")
def verify(
    prefix: str = typer.Argument(..., metavar="PREFIX", help="Algorithm trace prefix."),
    level: str = typer.Option("semantics", "--level", "-l",
                              help="Deepest check: structure, progress or semantics (each includes the previous)."),
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Check that a trace is well formed, deadlock free and computes its collective (exit 3 if not)."""
    from ..chakra import Algorithm, read_trace
    from ..verify import verify as run_verify

    if level not in ("structure", "progress", "semantics"):
        raise UsageError(f"unknown level {level!r}", hint="use structure, progress or semantics")
    alg = read_trace(prefix)
    if not isinstance(alg, Algorithm):
        raise UsageError(f"{prefix}: is a workload trace; only algorithms can be verified")
    report = run_verify(alg, level=level)
    problems = list(report.problems)
    if fmt == OutputFormat.json:
        emit_json({
            "prefix": prefix,
            "ok": bool(report.ok),
            "levels_checked": list(report.levels_checked),
            "not_checked": dict(report.not_checked),
            "notes": list(report.notes),
            "problems": [{"level": p.level, "message": p.message, "rank": p.rank, "node": p.node} for p in problems],
        })
    elif report.ok:
        out(f"ok: {prefix}: {alg.meta.collective} on {alg.ranks} ranks (checked {report.checked_text()})")
        for note in report.notes:
            err(f"note: {note}")
    else:
        for p in problems:
            out(str(p))
    if not report.ok:
        err(f"error: {prefix}: verification failed with {len(problems)} problem(s)")
        raise typer.Exit(ExitCode.VALIDATION)


#: the largest JSON view ``convert`` reads (json.loads needs several times the text in memory;
#: the JSON view is for inspection, very large sets belong in ET files)
_MAX_JSON_BYTES = 1 << 30


def _read_json_file(path: Path) -> str:
    """The text of a regular file (a fifo or device is refused before it can block us)."""
    import stat

    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path}: is not a regular file", hint="convert reads JSON from a regular file")
    if st.st_size > _MAX_JSON_BYTES:
        raise FormatError(f"{path}: {st.st_size} bytes is more than the {_MAX_JSON_BYTES} a JSON view may have")
    return path.read_bytes().decode("utf-8")


@app.command("convert")
def convert(
    src: str = typer.Argument(..., metavar="SRC", help="ET prefix, or a .json file."),
    dst: str = typer.Argument(..., metavar="DST", help="A .json file (from ET), or an ET prefix (from JSON)."),
) -> None:
    """Convert an algorithm between Chakra ET files and collhub's JSON view, both ways."""
    from ..atomic import write_file
    from ..chakra import algorithm_from_json, algorithm_to_json, read_algorithm, write_algorithm

    if src.endswith(".json") and not dst.endswith(".json"):
        try:
            data: Any = json.loads(_read_json_file(Path(src)))
        except OSError as exc:
            # a missing or unreadable input is a bad input file, exit 3 as for an ET prefix
            raise FormatError(f"{src}: cannot read: {exc.strerror or exc}",
                              hint="give an existing .json file (trace convert PREFIX FILE.json writes one)") from None
        except UnicodeDecodeError as exc:
            raise FormatError(f"{src}: not UTF-8 text (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise FormatError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        try:
            alg = algorithm_from_json(data)
        except FormatError as exc:
            # The library does not know the file name; the user needs it.
            raise FormatError(f"{src}: {exc.message}", hint=exc.hint) from None
        files = write_algorithm(alg, dst)
        out(f"wrote {len(files)} file(s): {dst}.0.et ...")
    elif dst.endswith(".json") and not src.endswith(".json"):
        text = json.dumps(algorithm_to_json(read_algorithm(src)), indent=1)
        write_file(dst, text)  # never half-written; 0666 minus the umask
        out(f"wrote {dst}")
    else:
        raise UsageError("convert needs one ET prefix and one .json file",
                         hint="collhub trace convert out/ring out/ring.json   (or the reverse)")
