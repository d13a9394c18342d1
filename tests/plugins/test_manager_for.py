"""manager_for(id): one component's command loads only the entry points named like its plugin,
and anything short of a clean resolution gives the full manager's answer (fixture distributions
on sys.path, real entry points)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from hub.errors import ComponentConflictError, ComponentNotFoundError
from hub.plugins import _manager, manager_for


@pytest.fixture(autouse=True)
def fresh_global() -> Iterator[None]:
    _manager._reset_global_manager()
    yield
    _manager._reset_global_manager()


def test_only_the_plugin_of_the_id_is_imported(use_plugins) -> None:
    use_plugins("good", "broken")
    pm = manager_for("good.flat")
    assert [p.name for p in pm.plugins()] == ["good"] and not pm.broken()
    assert pm.component("good.flat").id == "good.flat"
    assert "collhub_fixture_broken.plugin" not in sys.modules  # never imported: its import explodes
    assert _manager._GLOBAL is None  # the process-wide (full) manager was not built
    core = manager_for("hub.ring")
    assert [p.name for p in core.plugins()] == ["hub"]
    assert "collhub_fixture_broken.plugin" not in sys.modules


def test_a_broken_provider_gets_the_full_managers_hint(use_plugins) -> None:
    use_plugins("good", "broken")
    pm = manager_for("broken.anything")
    assert pm is _manager._GLOBAL and {p.name for p in pm.plugins()} >= {"hub", "good"}
    with pytest.raises(ComponentNotFoundError) as exc:
        pm.component("broken.anything")
    assert "failed to load" in exc.value.hint


def test_an_unknown_id_gets_did_you_mean_over_every_plugin(use_plugins) -> None:
    use_plugins("good")
    pm = manager_for("flat")  # a bare name: suggested from every plugin's components
    assert pm is _manager._GLOBAL
    with pytest.raises(ComponentNotFoundError) as exc:
        pm.component("flat")
    assert "good.flat" in exc.value.hint
    with pytest.raises(ComponentNotFoundError) as exc:
        manager_for("good.flta").component("good.flta")
    assert exc.value.hint == "did you mean good.flat?"


def test_duplicate_names_resolve_to_the_first_and_list_the_second(use_plugins) -> None:
    use_plugins("dup_a", "dup_b")
    pm = manager_for("dup.same")
    assert pm.component("dup.same").distribution == "collhub_fixture_dup_a"
    [b] = pm.broken()
    assert isinstance(b.error, ComponentConflictError)
    assert "collhub_fixture_dup_a" in b.message and "collhub_fixture_dup_b" in b.message


def test_strict_mode_loads_everything(use_plugins, monkeypatch: pytest.MonkeyPatch) -> None:
    use_plugins("good", "broken")
    monkeypatch.setenv("COLLHUB_STRICT_PLUGINS", "1")
    with pytest.raises(Exception, match="exploded at import"):
        manager_for("good.flat")  # strict: the broken plugin is an error, as with every command
