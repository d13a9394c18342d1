"""Observer hooks called in isolation: a raising hook never fails a run nor blames a component.

Pluggy calls every implementation of a hook in one loop and lets the first exception end it
(and whatever called it). Observers (``collhub_before_pipeline_run``, ``collhub_after_step``,
...) only watch a run, so :func:`call_observers` calls each implementation on its own: one that
raises is recorded as a :class:`HookFailure` naming its plugin, and the run goes on, exactly as
a plugin that fails to load is skipped at load time. ``COLLHUB_STRICT_PLUGINS=1`` makes it fatal
(a :class:`~hub.errors.PluginError`, exit 4), as it does for load errors.

Failures in worker processes come back as data with the unit's result; the main process reports
each ``(plugin, hook)`` once, as a :class:`PluginHookWarning` (``warning: ...`` in the CLI).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ...errors import PluginError
from ...plugins._guard import _describe, guarded
from ...plugins._loader import strict_mode

__all__ = ["HookFailure", "HookReporter", "PluginHookWarning", "call_observers"]


class PluginHookWarning(UserWarning):
    """An observer hook of a plugin raised; the run went on without it."""


@dataclass(frozen=True)
class HookFailure:
    """One raising hook implementation: which plugin, which hook, what it raised."""

    plugin: str
    distribution: str
    hook: str
    error: str

    def message(self) -> str:
        dist = f" ({self.distribution})" if self.distribution and self.distribution != self.plugin else ""
        return f"plugin {self.plugin}{dist}: hook {self.hook} failed: {self.error}; the run went on without it"

    def as_dict(self) -> dict[str, str]:
        return {"plugin": self.plugin, "distribution": self.distribution, "hook": self.hook, "error": self.error}


def _distribution(mgr: Any, plugin: str) -> str:
    for info in mgr.plugins():
        if info.name == plugin:
            return str(info.distribution)
    return ""


def call_observers(mgr: Any, hook: str, **kwargs: Any) -> list[HookFailure]:
    """Call every implementation of observer ``hook`` with ``kwargs``; return those that raised.

    Under ``COLLHUB_STRICT_PLUGINS=1`` the first failure is raised as a ``PluginError`` instead."""
    caller = getattr(mgr.hook, hook)
    impls = caller.get_hookimpls()
    if not impls:  # the common case, kept cheap: it runs around every step
        return []
    failures: list[HookFailure] = []
    for impl in reversed(impls):  # pluggy's own order: last registered first
        args = [kwargs[name] for name in impl.argnames]
        where = f"plugin {impl.plugin_name}: hook {hook}"
        try:
            guarded(impl.function, *args, what=where, hint="")
        except Exception as exc:  # noqa: BLE001 - an observer's failure is reported, not propagated
            cause = exc.__cause__ or exc
            if isinstance(exc, PluginError) and exc.message.startswith(where):
                text = exc.message[len(where) :].strip().removeprefix("failed: ")  # SystemExit & co.
            else:
                text = _describe(cause)
            failure = HookFailure(impl.plugin_name, _distribution(mgr, impl.plugin_name), hook, text)
            if strict_mode():
                dist = failure.distribution or impl.plugin_name
                raise PluginError(
                    f"plugin {impl.plugin_name}: hook {hook} failed: {text}",
                    hint=f"fix or disable it (COLLHUB_DISABLE_PLUGINS={dist}); without "
                    "COLLHUB_STRICT_PLUGINS a failing hook is only a warning",
                ) from cause
            failures.append(failure)
    return failures


class HookReporter:
    """Reports each failing ``(plugin, hook)`` once per run, as a :class:`PluginHookWarning`."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()

    def report(self, failures: list[HookFailure] | list[dict[str, str]]) -> None:
        for f in failures:
            failure = HookFailure(**f) if isinstance(f, dict) else f
            if (failure.plugin, failure.hook) in self._seen:
                continue
            self._seen.add((failure.plugin, failure.hook))
            warnings.warn(PluginHookWarning(failure.message()), stacklevel=2)
