"""Load the installed plugins in a child process and describe them as JSON (``plugins list``).

``collhub plugins list`` must not import plugin code into the collhub process: a plugin that
calls ``os._exit``, crashes the interpreter or blocks inside C code at import would take the
command with it. The parent runs ``python -m hub.plugins._probe OUT`` (same interpreter, same
environment and ``sys.path``) with a deadline; the child loads every plugin under the usual
guards (:mod:`hub.plugins._guard`), writes the description to ``OUT`` and reports on stderr which
entry point it is importing. When the child dies or misses the deadline, the parent marks the
entry point it was importing as broken and probes again without that distribution.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["probe"]

_MARK = "collhub-probe: loading "  # = hub.plugins._probe.MARK (not imported: it pulls in pluggy)
#: Seconds the whole child may take (each import is bounded inside it by COLLHUB_PLUGIN_IMPORT_TIMEOUT).
PROBE_TIMEOUT_S = 120.0
_MAX_RETRIES = 8


def _last_loading(stderr: str) -> tuple[str, str, str] | None:
    lines = [line[len(_MARK) :] for line in stderr.splitlines() if line.startswith(_MARK)]
    if not lines:
        return None
    dist, version, label = (lines[-1].split("\t") + ["", "", ""])[:3]
    return dist, version, label


def probe() -> dict[str, Any]:
    """Describe the installed plugins without importing any of them here (see the module docstring).

    The description is cached (``plugins-v1.json`` next to the command cache) under a key over
    the installed entry points, the loading environment, the modification times of every
    ``sys.path`` directory (an install or uninstall changes them) and of every ``.py`` file of
    each plugin's top-level package (an edit changes them), so an unchanged plugin set costs no
    child process."""
    from ._app import _cache_file, _fingerprint

    fingerprint, third_party = _fingerprint()
    if not third_party:  # only the core's own entry point: no plugin code to keep out
        from ..plugins import get_manager
        from ..plugins._probe import describe

        return describe(get_manager())
    key = _cache_key(fingerprint)
    path = _cache_file().with_name("plugins-v1.json")
    try:
        cached = json.loads(path.read_text())
        if cached.get("key") == key and isinstance(cached.get("doc"), dict):
            return cached["doc"]
    except (OSError, ValueError, AttributeError):
        pass
    doc = _probe_child()
    try:  # best effort, atomic: a read-only cache directory must not break the listing
        path.parent.mkdir(parents=True, exist_ok=True)
        from ..atomic import write_file
        from ..errors import HubError

        write_file(path, json.dumps({"key": key, "doc": doc}))
    except (OSError, HubError):  # an unusable place is a UsageError of hub.atomic
        pass
    return doc


def _cache_key(fingerprint: str) -> str:
    import hashlib
    from importlib.machinery import PathFinder

    from ..plugins._index import entry_rows

    parts = [fingerprint, sys.version]
    for entry in sys.path:
        parts.append(f"{entry}:{_mtime(entry)}")
    for row in entry_rows("collhub")[0]:
        top = row.value.split(":", 1)[0].split(".", 1)[0]
        # PathFinder only looks for the files: it executes nothing of the package.
        spec = PathFinder.find_spec(top)
        roots = list(spec.submodule_search_locations or []) if spec is not None else []
        if spec is not None and spec.origin and not roots:
            parts.append(f"{spec.origin}:{_mtime(spec.origin)}")
        for root in roots:
            for dirpath, _dirs, files in os.walk(root):
                py = [f for f in sorted(files) if f.endswith(".py")]
                parts += [f"{dirpath}/{f}:{_mtime(os.path.join(dirpath, f))}" for f in py]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return 0


def _probe_child() -> dict[str, Any]:
    from ..errors import PluginLoadError

    dead: list[dict[str, Any]] = []
    disabled = [x for x in os.environ.get("COLLHUB_DISABLE_PLUGINS", "").split(",") if x.strip()]
    for _ in range(_MAX_RETRIES):
        with tempfile.TemporaryDirectory(prefix="collhub-probe-") as tmp:
            out = Path(tmp) / "plugins.json"
            env = dict(
                os.environ,
                PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                COLLHUB_DISABLE_PLUGINS=",".join(disabled),
            )
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "hub.plugins._probe", str(out)],
                    env=env,
                    text=True,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    timeout=PROBE_TIMEOUT_S,
                )
                stderr, code = proc.stderr, proc.returncode
            except subprocess.TimeoutExpired as exc:
                stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
                code = None
            if code == 0 and out.is_file():
                doc = json.loads(out.read_text())
                _relay(stderr)
                break
        culprit = _last_loading(stderr)
        if culprit is None:
            raise PluginLoadError(
                "listing the plugins failed: the probe process "
                + ("timed out" if code is None else f"exited with status {code}"),
                hint="run `collhub --debug plugins doctor` to load them in this process",
            )
        dist, version, label = culprit
        why = f"did not finish within {PROBE_TIMEOUT_S:g} s" if code is None else f"ended the process (status {code})"
        dead.append(
            {
                "distribution": dist,
                "version": version,
                "entry_point": label,
                "error_type": "PluginLoadError",
                "error": f"plugin {label.split(' = ')[0]!r} from {dist} {version} {why} while being imported",
            }
        )
        disabled.append(dist)
    else:
        raise PluginLoadError(
            "listing the plugins failed: too many plugins end the process at import",
            hint="set COLLHUB_LOAD_PLUGINS to the plugins you need",
        )
    if "error" in doc:  # strict mode: the first load error, as the child raised it
        raise PluginLoadError(doc["error"]["message"], hint=doc["error"].get("hint"))
    doc["broken"] = list(doc.get("broken", [])) + dead
    return doc


def _relay(stderr: str) -> None:
    """What plugins wrote while the child loaded them goes to our stderr (never stdout)."""
    rest = [line for line in stderr.splitlines() if not line.startswith(_MARK)]
    if rest:
        sys.stderr.write("\n".join(rest) + "\n")
