"""``collhub registry build|serve|check``, mounted through the ``collhub_commands`` hook.

The client commands (``collhub search | install | uninstall``) stay in the core (``hub.cli.registry``).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import typer

from hub.cli import FORMAT_OPTION, OutputFormat, emit_json, err, out, table
from hub.errors import ExitCode, UsageError

__all__ = ["app"]

app = typer.Typer(help="Build, serve and check a plugin registry.", no_args_is_help=True, rich_markup_mode=None)

_SOURCES_HINT = "pass wheel files, directories of wheels, or plugin project directories"


def _wheels_from(paths: list[Path], workdir: Path) -> dict[Path, Path]:
    """Wheel files, directories of wheels, or plugin project directories (built with pip here):
    each wheel with the source it came from (itself, its directory, or the project it was built from)."""
    wheels: dict[Path, Path] = {}
    for path in paths:
        if path.is_file():
            wheels[path] = path
        elif (path / "pyproject.toml").is_file() or (path / "setup.py").is_file():
            # an absolute path, and no index: pip reads a bare word ("six") as a requirement and
            # would download it; a local path must always stay a path
            built = workdir / f"build-{len(wheels)}-{path.name}"
            with _no_debris(path):
                proc = _pip_wheel(path, built)
            if proc.returncode != 0:
                tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
                raise UsageError(
                    f"{path}: building a wheel failed: {tail}",
                    hint="run `pip wheel --no-deps --no-build-isolation` there to see the whole error",
                )
            wheels.update((w, path) for w in sorted(built.glob("*.whl")))
        elif path.is_dir():
            found = sorted(p for p in path.glob("*.whl") if p.is_file())
            if not found:
                raise UsageError(f"{path}: a directory with no *.whl files and no pyproject.toml", hint=_SOURCES_HINT)
            wheels.update((w, path) for w in found)
        elif path.exists():
            raise UsageError(f"{path}: not a regular file or a directory", hint=_SOURCES_HINT)
        else:
            raise UsageError(f"{path}: no such file or directory", hint=_SOURCES_HINT)
    return dict(sorted(wheels.items()))


#: seconds one ``pip wheel`` of a local project may take (COLLHUB_PIP_TIMEOUT, as for install)
_PIP_TIMEOUT = 900.0


def _pip_wheel(path: Path, built: Path) -> subprocess.CompletedProcess[str]:
    """``pip wheel`` of project ``path`` into ``built``, with a deadline."""
    import os

    try:
        timeout = float(os.environ.get("COLLHUB_PIP_TIMEOUT", "") or _PIP_TIMEOUT)
    except ValueError:
        timeout = _PIP_TIMEOUT
    if not 0 < timeout < 1e6:
        timeout = _PIP_TIMEOUT
    try:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "-w",
                str(built),
                str(path.resolve()),
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"{path}: building a wheel did not finish within {timeout:g} s; stopped",
            hint="build the wheel yourself and pass the .whl, or raise COLLHUB_PIP_TIMEOUT",
        ) from None


#: what a setuptools build leaves in the project it builds in place
_DEBRIS = ("*.egg-info", "src/*.egg-info", "build")


@contextlib.contextmanager
def _no_debris(project: Path) -> Iterator[None]:
    """Remove what building ``project`` in place created there (``*.egg-info``, ``build/``):
    the user's directory is left as it was found, whether the build worked or not."""
    before = {p for pattern in _DEBRIS for p in project.glob(pattern)}
    try:
        yield
    finally:
        for pattern in _DEBRIS:
            for p in project.glob(pattern):
                if p not in before and p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)


def _skipped_line(file: str, error: str, source: Path | None) -> str:
    """``skipped NAME (WHEEL, from SOURCE): WHY`` for a wheel the site builder refused."""
    name = file.split("-", 1)[0].replace("_", "-").lower() if file.endswith(".whl") else file
    why = error[len(file) + 2 :] if error.startswith(f"{file}: ") else error
    origin = f", from {source}" if source is not None and source.name != file else ""
    return f"skipped {name} ({file}{origin}): {why}"


@app.command("build")
def build(
    sources: list[Path] = typer.Argument(
        ..., help="Wheel files, directories of wheels, or plugin project directories."
    ),
    out_dir: Path = typer.Option(Path("site"), "--out", "-o", help="Site directory (a new one, or --force)."),
    yank: list[str] = typer.Option([], "--yank", help="Mark NAME==VERSION as yanked (repeatable)."),
    url: str | None = typer.Option(  # noqa: UP007 - Typer needs Optional here
        None,
        "--url",
        help="Address the site will be served at, for the pages' install commands "
        "(default: the pages fill it in from their own address).",
    ),
    fmt: OutputFormat = FORMAT_OPTION,
    force: bool = typer.Option(False, "--force", help="Replace an existing site at --out (atomically)."),
) -> None:
    """Index plugin wheels into a static registry site, without importing or installing them.

    Example: collhub registry build plugins/mscclang plugins/astrasim --out site
    """
    from ._builder import build_site

    with tempfile.TemporaryDirectory(prefix="collhub-wheels-") as tmp:
        wheels = _wheels_from(list(sources), Path(tmp))
        report = build_site(list(wheels), out_dir, yanked=yank, base_url=url, force=force)
    source_of = {w.name: src for w, src in wheels.items()}
    if fmt == OutputFormat.json:
        emit_json(
            {"site": str(report.site), "plugins": report.plugins, "errors": [e.model_dump() for e in report.errors]}
        )
    else:
        rows = [(name, ", ".join(vs)) for name, vs in sorted(report.plugins.items())]
        out(table(["plugin", "versions"], rows))
        out(f"site written to {report.site} ({len(report.plugins)} plugins)")
    if report.errors:
        # the site holds the others, but a plugin asked for is missing from it: not a success
        for e in report.errors:
            err(f"error: {_skipped_line(e.file, e.error, source_of.get(e.file))}")
        first = source_of.get(report.errors[0].file)
        err(
            f"hint: {len(report.errors)} wheel(s) skipped; `collhub plugins validate "
            f"{first if first is not None else 'WHEEL'}` explains the first in full"
        )
        raise typer.Exit(ExitCode.VALIDATION)


@app.command("serve")
def serve(
    site: Path = typer.Argument(..., help="Site directory made by `collhub registry build`."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8000, "--port", "-p", help="Port (0 picks a free one)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request."),
) -> None:
    """Serve a registry site read-only (ETag, If-None-Match, safe paths).

    Example: collhub registry serve site --port 8000
    """
    from ._server import make_server

    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a TCP port", hint="use 1..65535, or 0 to pick a free one")
    server = make_server(site, host, port, verbose=verbose)
    err(f"serving {site} at {server.url}  (Ctrl-C to stop)")
    try:
        server.serve_forever()
    finally:
        server.server_close()


@app.command("check")
def check(site: Path = typer.Argument(..., help="Site directory to check."), fmt: OutputFormat = FORMAT_OPTION) -> None:
    """Validate every document of a site and the hash and size of every file.

    Example: collhub registry check site
    """
    import hashlib
    import json

    from hub.registry import IndexDoc, PluginDoc

    problems: list[str] = []
    try:
        index = IndexDoc.model_validate(json.loads((site / "v1" / "index.json").read_text()))
    except Exception as exc:  # noqa: BLE001 - report, don't crash
        raise UsageError(f"{site}/v1/index.json: {exc}") from None
    for summary in index.plugins:
        path = site / "v1" / "plugins" / f"{summary.name}.json"
        try:
            doc = PluginDoc.model_validate(json.loads(path.read_text()))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{path}: {exc}")
            continue
        for version, entry in doc.versions.items():
            for f in entry.files:
                target = (path.parent / f.url).resolve()
                if site.resolve() not in target.parents:  # a hostile document must not make us read elsewhere
                    problems.append(f"{doc.name} {version}: {f.filename} points outside the site ({f.url[:200]})")
                    continue
                if not target.is_file():
                    problems.append(f"{doc.name} {version}: missing {f.filename}")
                    continue
                data = target.read_bytes()
                if len(data) != f.size or hashlib.sha256(data).hexdigest() != f.hashes.get("sha256"):
                    problems.append(f"{doc.name} {version}: {f.filename} does not match its hash/size")
    if fmt == OutputFormat.json:
        emit_json({"site": str(site), "plugins": len(index.plugins), "problems": problems})
    else:
        for p in problems:
            out(p)
        out(f"{len(index.plugins)} plugins, {len(problems)} problems")
    if problems:
        raise typer.Exit(3)
