"""Content keys: what a unit's result depends on, hashed, so a resumed run can reuse it.

* A **produce key** covers the source name, its producer and transforms (ids, interpolated
  params, timeouts excluded), the version of the distribution providing each, and the content
  of every file a param names (a ``path: algo.xml`` changes the key when the file changes).
* A **row key** covers the produce key of its algorithm (its input), the consumer's name, id,
  version and interpolated params, and the point.

Two runs of one pipeline with the same plugins give the same keys; editing a param, upgrading
a plugin or changing an input file changes exactly the keys that depend on it.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

__all__ = ["KeyMaker"]

#: Files above this size are keyed by size and modification time instead of content.
_HASH_LIMIT = 64 << 20


class KeyMaker:
    """Computes keys against one plugin manager (versions and file hashes are cached)."""

    def __init__(self, mgr: Any) -> None:
        self._mgr = mgr
        self._versions: dict[str, str] = {}
        self._files: dict[str, str | None] = {}

    def version(self, component: str) -> str:
        """``distribution==version`` of the plugin providing ``component`` (``?`` when unknown)."""
        got = self._versions.get(component)
        if got is None:
            got = "?"
            try:
                spec = self._mgr.component(component)
                plugin = getattr(spec, "plugin", None)
                for info in self._mgr.plugins():
                    if info.name == plugin:
                        got = f"{info.distribution}=={info.version}"
                        break
            except Exception:  # noqa: BLE001 - an unknown id fails later, where it runs
                pass
            self._versions[component] = got
        return got

    def _file_digest(self, value: str) -> str | None:
        if value in self._files:
            return self._files[value]
        digest = None
        try:
            if os.path.isfile(value):
                st = os.stat(value)
                if st.st_size > _HASH_LIMIT:
                    digest = f"size={st.st_size},mtime={st.st_mtime_ns}"
                else:
                    with open(value, "rb") as fh:
                        digest = hashlib.sha256(fh.read()).hexdigest()
        except (OSError, ValueError):
            digest = None
        self._files[value] = digest
        return digest

    def _inputs(self, params: Any) -> dict[str, str]:
        """``{path: sha256}`` of every string in ``params`` (at any depth) that names a file."""
        found: dict[str, str] = {}
        stack = [params]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, (list, tuple)):
                stack.extend(v)
            elif isinstance(v, str) and 0 < len(v) < 4096 and "\n" not in v and "\0" not in v:
                digest = self._file_digest(v)
                if digest is not None:
                    found[v] = digest
        return found

    def produce_key(self, source: str, producer: str, params: Any, transforms: list[dict[str, Any]]) -> str:
        steps = [{"use": producer, "version": self.version(producer), "params": params, "files": self._inputs(params)}]
        steps += [
            {
                "use": t["use"],
                "version": self.version(t["use"]),
                "params": t["params"],
                "files": self._inputs(t["params"]),
            }
            for t in transforms
        ]
        return _digest({"source": source, "steps": steps})

    def row_key(
        self, produce_key: str, consumer: str | None, use: str | None, params: Any, point: dict[str, Any]
    ) -> str:
        step = (
            None
            if use is None
            else {"use": use, "version": self.version(use), "params": params, "files": self._inputs(params)}
        )
        return _digest({"input": produce_key, "consumer": consumer, "step": step, "point": point})


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]
