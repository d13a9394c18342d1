"""Running MSCCLang-style programs: in-process with :mod:`collhub_mscclang.lang`, or the real
msccl-tools package in a subprocess (``engine="msccl"``), whose printed XML is then imported."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import runpy
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from hub.chakra import Algorithm
from hub.errors import AlgorithmError, ExternalToolError, HubError, UsageError

from . import lang
from ._reader import read_msccl_ir

__all__ = ["run_program"]


def run_program(
    path: str | os.PathLike[str],
    args: list[str] | dict[str, Any] | None = None,
    *,
    engine: str = "collhub",
    name: str | None = None,
    timeout_s: float = 300.0,
) -> Algorithm:
    """Run the program at ``path`` and return the algorithm it declares (its last MSCCLProgram)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"program not found: {p}")
    if engine == "msccl":
        return _run_msccl(p, args, name=name, timeout_s=timeout_s)
    argv = [str(p)] + ([str(a) for a in args] if isinstance(args, list) else [])
    kw = dict(args) if isinstance(args, dict) else {}
    before = len(lang._finished)
    token = lang._args.set(kw)
    old_argv = sys.argv
    sys.argv = argv
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # programs may print XML(); keep stdout clean
            runpy.run_path(str(p), run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise AlgorithmError(f"{p}: the program exited with status {e.code}") from None
    except (UsageError, AlgorithmError) as e:
        raise type(e)(f"{p}:{_line_in(p, e)}: {e.message}", hint=e.hint) from None
    except HubError:
        raise
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != "msccl":
            raise AlgorithmError(f"{p}:{_line_in(p, e)}: {type(e).__name__}: {e}") from None
        raise _msccl_program_error(p, e) from None
    except Exception as e:  # a bug in the user's program: one line with its position
        raise AlgorithmError(f"{p}:{_line_in(p, e)}: {type(e).__name__}: {e}") from None
    finally:
        sys.argv = old_argv
        lang._args.reset(token)
    done = lang._finished[before:]
    del lang._finished[before:]
    if not done:
        raise AlgorithmError(
            f"{p}: the program declared no MSCCLProgram", hint="use `with MSCCLProgram(name, collective): ...`"
        )
    alg = done[-1].algorithm
    assert alg is not None
    return alg.with_meta(name=name) if name else alg


def _msccl_program_error(p: Path, e: ModuleNotFoundError) -> UsageError:
    """An msccl-tools program run on collhub's engine: say which language is which, and how to
    run it as it is (the two look alike but are not the same API)."""
    return UsageError(
        f"{p}:{_line_in(p, e)}: this is an msccl-tools program (it imports {e.name!r}); engine=collhub runs "
        "collhub's MSCCLang-style language (`from collhub_mscclang.lang import ...`), which is similar to "
        "msccl-tools' MSCCLang but not the same API, and the 'msccl' package is not installed",
        hint="to run it as it is: pip install git+https://github.com/Azure/msccl-tools, then --set engine=msccl; "
        "or port it to collhub_mscclang.lang (plugins/mscclang/README.md, 'mscclang.program: the language')",
    )


def _line_in(p: Path, e: BaseException) -> str:
    """The line of the user's program where ``e`` was raised (deepest frame in that file)."""
    line = "?"
    target = str(p.resolve())
    for fr in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fr.filename) == target:
            line = str(fr.lineno)
    return line


def msccl_available() -> bool:
    """True when the real msccl-tools package (``import msccl``) is importable."""
    return importlib.util.find_spec("msccl") is not None


def _run_msccl(p: Path, args: list[str] | dict[str, Any] | None, *, name: str | None, timeout_s: float) -> Algorithm:
    if not msccl_available():
        raise ExternalToolError(
            "engine=msccl needs the 'msccl' package (msccl-tools), which is not installed",
            hint="pip install git+https://github.com/Azure/msccl-tools, or use engine=collhub",
        )
    if isinstance(args, dict):
        argv = [f"--{k}={v}" for k, v in args.items()]
    else:
        argv = [str(a) for a in (args or [])]
    try:
        proc = subprocess.run([sys.executable, str(p), *argv], capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ExternalToolError(f"{p}: msccl program timed out after {timeout_s:g} s") from None
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        raise ExternalToolError(f"{p}: msccl program failed with status {proc.returncode}: {tail[0]}")
    out = proc.stdout
    start = out.find(b"<algo")
    if start < 0:
        raise ExternalToolError(f"{p}: the program printed no <algo> XML", hint="does it call XML()?")
    with tempfile.TemporaryDirectory() as d:
        xml = Path(d) / (p.stem + ".xml")
        xml.write_bytes(out[start:])
        alg = read_msccl_ir(xml, name=name)
    return alg.with_meta(producer="mscclang.program")
