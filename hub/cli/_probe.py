"""Load the installed plugins in a child process and describe them as JSON (``plugins list``).

``collhub plugins list`` must not import plugin code into the collhub process: a plugin that
calls ``os._exit``, crashes the interpreter or blocks inside C code at import would take the
command with it. The parent runs ``python -m hub.cli._probe OUT`` (same interpreter, same
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

__all__ = ["describe", "probe"]

_MARK = "collhub-probe: loading "
#: Seconds the whole child may take (each import is bounded inside it by COLLHUB_PLUGIN_IMPORT_TIMEOUT).
PROBE_TIMEOUT_S = 120.0
_MAX_RETRIES = 8


def describe(manager: Any) -> dict[str, Any]:
    """The ``plugins list --format json`` document of ``manager`` plus refused and command rows."""
    from .plugins import _component_dict

    commands = []
    for name, sub in manager.commands().items():
        text = getattr(getattr(sub, "info", None), "help", None) or ""
        commands.append([name, str(text).strip().splitlines()[0] if text else f"Commands of plugin {name}."])
    return {
        "plugins": [p.as_dict() for p in manager.plugins()],
        "components": [_component_dict(c) for c in manager.components()],
        "broken": [b.as_dict() for b in manager.broken()],
        "skipped": [{"distribution": s.distribution, "version": s.version, "entry_point": s.label}
                    for s in manager.skipped()],
        "refused": manager.refused_commands(),
        "commands": commands,
    }


def _child(out: str) -> int:
    from ..errors import HubError
    from ..plugins import create_manager

    def progress(cand: Any) -> None:
        sys.stderr.write(f"{_MARK}{cand.distribution}\t{cand.version}\t{cand.label}\n")
        sys.stderr.flush()

    manager = create_manager(autoload=False)
    try:
        manager.load_entrypoints(progress=progress)
        doc: dict[str, Any] = describe(manager)
    except HubError as exc:  # strict mode re-raises a load error: hand it to the parent
        doc = {"error": {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}
    Path(out).write_text(json.dumps(doc))
    return 0


def _last_loading(stderr: str) -> tuple[str, str, str] | None:
    lines = [line[len(_MARK):] for line in stderr.splitlines() if line.startswith(_MARK)]
    if not lines:
        return None
    dist, version, label = (lines[-1].split("\t") + ["", "", ""])[:3]
    return dist, version, label


def probe() -> dict[str, Any]:
    """Describe the installed plugins without importing any of them here (see the module docstring)."""
    from ..errors import PluginLoadError

    dead: list[dict[str, Any]] = []
    disabled = [x for x in os.environ.get("COLLHUB_DISABLE_PLUGINS", "").split(",") if x.strip()]
    for _ in range(_MAX_RETRIES):
        with tempfile.TemporaryDirectory(prefix="collhub-probe-") as tmp:
            out = Path(tmp) / "plugins.json"
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                       COLLHUB_DISABLE_PLUGINS=",".join(disabled))
            try:
                proc = subprocess.run([sys.executable, "-m", "hub.cli._probe", str(out)], env=env, text=True,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      timeout=PROBE_TIMEOUT_S)
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
            raise PluginLoadError("listing the plugins failed: the probe process "
                                  + ("timed out" if code is None else f"exited with status {code}"),
                                  hint="run `collhub --debug plugins doctor` to load them in this process")
        dist, version, label = culprit
        why = f"did not finish within {PROBE_TIMEOUT_S:g} s" if code is None else f"ended the process (status {code})"
        dead.append({"distribution": dist, "version": version, "entry_point": label, "error_type": "PluginLoadError",
                     "error": f"plugin {label.split(' = ')[0]!r} from {dist} {version} {why} while being imported"})
        disabled.append(dist)
    else:
        raise PluginLoadError("listing the plugins failed: too many plugins end the process at import",
                              hint="set COLLHUB_LOAD_PLUGINS to the plugins you need")
    if "error" in doc:  # strict mode: the first load error, as the child raised it
        raise PluginLoadError(doc["error"]["message"], hint=doc["error"].get("hint"))
    doc["broken"] = list(doc.get("broken", [])) + dead
    return doc


def _relay(stderr: str) -> None:
    """What plugins wrote while the child loaded them goes to our stderr (never stdout)."""
    rest = [line for line in stderr.splitlines() if not line.startswith(_MARK)]
    if rest:
        sys.stderr.write("\n".join(rest) + "\n")


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1]))
