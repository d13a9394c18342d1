"""The plugin manager against real entry points (fixture distributions on sys.path)."""

from __future__ import annotations

import sys
import types
import warnings

import pytest

from hub.errors import (
    ComponentConflictError,
    ComponentNotFoundError,
    IncompatiblePluginError,
    PluginError,
    PluginLoadError,
    UsageError,
)
from hub.plugins import ConsumerSpec, PluginApiWarning, ProducerSpec, create_manager, hookimpl

CORE_IDS = {
    "hub.ring",
    "hub.direct",
    "hub.halving_doubling",
    "hub.double_binary_tree",
    "hub.hierarchical",
    "hub.verify",
    "hub.chunk",
    "hub.remap",
    "hub.instances",
    "hub.inline",
    "hub.overlap",
    "hub.stats",
    "hub.simulate",
}


def test_core_registers_contract_components_without_importing_them(use_plugins):
    use_plugins()
    for mod in ("hub.algorithms", "hub.transforms", "hub.sim"):
        sys.modules.pop(mod, None)
    pm = create_manager()
    assert {c.id for c in pm.components()} == CORE_IDS
    assert [p.name for p in pm.plugins()] == ["hub"]
    assert pm.plugins()[0].distribution == "collhub" and pm.plugins()[0].builtin
    # listing resolved nothing: the factories are "module:attr" strings
    assert not {"hub.algorithms", "hub.transforms", "hub.sim"} & set(sys.modules)
    ring = pm.component("hub.ring")
    assert ring.kind == "producer" and ring.factory == "hub.algorithms:produce_ring"
    assert ring.params == "hub.algorithms:RingParams"
    assert ring.collectives == {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"}
    assert pm.component("hub.direct").collectives == ring.collectives | {"gather", "scatter"}
    assert pm.component("hub.halving_doubling").collectives == {"allreduce", "allgather", "reducescatter"}
    assert pm.component("hub.double_binary_tree").collectives == {"allreduce", "broadcast", "reduce"}
    assert pm.component("hub.hierarchical").collectives == {"allreduce", "allgather", "reducescatter", "alltoall"}
    assert pm.component("hub.simulate").inputs == {"algorithm", "workload"}
    assert pm.component("hub.simulate").factory == "hub.sim:simulate_consumer"
    assert {c.id for c in pm.components("transform")} == {
        "hub.verify",
        "hub.chunk",
        "hub.remap",
        "hub.instances",
        "hub.inline",
        "hub.overlap",
    }
    assert {c.id for c in pm.components("consumer")} == {"hub.stats", "hub.simulate"}


def test_good_plugin_loads_lazily(use_plugins):
    use_plugins("good")
    pm = create_manager()
    info = {p.name: p for p in pm.plugins()}["good"]
    assert (info.distribution, info.version, info.api_version) == ("collhub_fixture_good", "1.2.0", "1.0")
    assert info.components == ["good.count", "good.flat", "good.rename"]
    assert info.commands == ["goodtool"]
    assert "collhub_commands" in info.hooks and info.location.endswith("plugin.py")
    assert "collhub_fixture_good._impl" not in sys.modules  # heavy code not imported by loading
    assert pm.component("good.flat").max_ranks == 64
    assert pm.broken() == []


def test_run_producer_transform_consumer_through_entry_point(use_plugins):
    use_plugins("good")
    pm = create_manager()
    alg = pm.run_producer("good.flat", {"ranks": 5, "root": 2})
    assert alg.ranks == 5 and alg.node_count() == 8  # 4 sends on the root + 4 receives
    renamed = pm.run_transform("good.rename", alg, {"name": "x"})
    assert renamed.meta.name == "x"
    res = pm.run_consumer("good.count", renamed)
    assert res.metrics == {"sends": 4, "ranks": 5}


def test_invalid_params_list_every_field(use_plugins):
    use_plugins("good")
    pm = create_manager()
    with pytest.raises(UsageError) as exc:
        pm.run_producer("good.flat", {"ranks": "many", "root": -1, "colour": "red"})
    msg = exc.value.message
    assert "ranks:" in msg and "'many'" in msg
    assert "root:" in msg and "colour: unknown parameter" in msg
    assert "collective, ranks, root" in exc.value.hint


def test_capability_checks(use_plugins):
    use_plugins("good")
    pm = create_manager()
    with pytest.raises(UsageError, match="does not implement allreduce"):
        pm.run_producer("good.flat", {"ranks": 4, "collective": "allreduce"})
    with pytest.raises(UsageError, match="at most 64 ranks, got 65"):
        pm.run_producer("good.flat", {"ranks": 65})
    with pytest.raises(UsageError, match="is a transform, not a producer"):
        pm.run_producer("good.rename", {"name": "x"})


def test_unknown_component_did_you_mean(use_plugins):
    use_plugins("good")
    pm = create_manager()
    with pytest.raises(ComponentNotFoundError) as exc:
        pm.component("good.flta")
    assert exc.value.exit_code == 4
    assert exc.value.hint == "did you mean good.flat?"
    with pytest.raises(ComponentNotFoundError) as exc:
        pm.component("ring")
    assert "hub.ring" in exc.value.hint


def test_broken_plugin_is_recorded_not_fatal(use_plugins):
    use_plugins("good", "broken")
    pm = create_manager()
    assert "good" in {p.name for p in pm.plugins()}
    [b] = pm.broken()
    assert (b.distribution, b.version) == ("collhub_fixture_broken", "0.1.0")
    assert b.entry_point == "broken = collhub_fixture_broken.plugin"
    assert isinstance(b.error, PluginLoadError)
    assert "exploded at import" in b.message and isinstance(b.error.__cause__, RuntimeError)
    with pytest.raises(ComponentNotFoundError) as exc:
        pm.component("broken.anything")
    assert "failed to load" in exc.value.hint


def test_strict_mode_reraises(use_plugins, monkeypatch):
    use_plugins("broken")
    monkeypatch.setenv("COLLHUB_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match="exploded at import"):
        create_manager()


def test_newer_major_api_refused(use_plugins):
    use_plugins("newmajor")
    pm = create_manager()
    [b] = pm.broken()
    assert isinstance(b.error, IncompatiblePluginError)
    assert "needs plugin API 2.0" in b.message and "1.0" in b.message
    assert "newmajor.future" not in {c.id for c in pm.components()}


def test_newer_minor_api_warns():
    mod = types.ModuleType("minor_plugin")
    mod.COLLHUB_PLUGIN_API = "1.7"

    @hookimpl
    def collhub_producers():
        return [ProducerSpec(name="p", summary="s", factory="x:y")]

    mod.collhub_producers = collhub_producers
    pm = create_manager(autoload=False)
    with pytest.warns(PluginApiWarning, match="1.7"):
        info = pm.register(mod, name="minor")
    assert info.components == ["minor.p"]


def test_a_name_belongs_to_the_first_distribution(use_plugins):
    """Two distributions claim plugin name 'dup': the first (by distribution name) keeps it and
    its ids; the second is listed broken naming both, and its module is never imported."""
    use_plugins("dup_a", "dup_b")
    pm = create_manager()
    [b] = pm.broken()
    assert isinstance(b.error, ComponentConflictError)
    assert b.distribution == "collhub_fixture_dup_b"
    assert "collhub_fixture_dup_a" in b.message and "collhub_fixture_dup_b" in b.message
    assert "dup.*" in b.message
    assert pm.component("dup.same").distribution == "collhub_fixture_dup_a"
    assert "collhub_fixture_dup_b" not in sys.modules


def test_allow_and_block_lists(use_plugins, monkeypatch):
    use_plugins("good", "broken")
    monkeypatch.setenv("COLLHUB_DISABLE_PLUGINS", "collhub-fixture-broken")  # normalised name
    pm = create_manager()
    assert pm.broken() == [] and "collhub_fixture_broken" in [s.distribution for s in pm.skipped()]
    assert "good" in [p.name for p in pm.plugins()]
    monkeypatch.delenv("COLLHUB_DISABLE_PLUGINS")
    monkeypatch.setenv("COLLHUB_LOAD_PLUGINS", "")  # core only
    pm = create_manager()
    assert [p.name for p in pm.plugins()] == ["hub"]
    assert {s.distribution for s in pm.skipped()} >= {"collhub_fixture_good", "collhub_fixture_broken"}


def test_invalid_descriptors_make_plugin_broken():
    bad = types.ModuleType("bad")

    @hookimpl
    def collhub_consumers():
        return [ProducerSpec(name="p", summary="s", factory="x:y")]  # wrong descriptor type

    bad.collhub_consumers = collhub_consumers
    pm = create_manager(autoload=False)
    with pytest.raises(PluginLoadError, match="expected a ConsumerSpec, got ProducerSpec"):
        pm.register(bad, name="bad")
    assert pm.plugins() == [] and pm.components() == []

    dotted = types.ModuleType("dotted")

    @hookimpl
    def collhub_producers():
        return [ProducerSpec(name="a.b", summary="s", factory="x:y")]

    dotted.collhub_producers = collhub_producers
    with pytest.raises(PluginLoadError, match="no dots"):
        pm.register(dotted, name="dotted")

    twice = types.ModuleType("twice")

    @hookimpl
    def collhub_producers():  # noqa: F811
        return [ProducerSpec(name="a", summary="s", factory="x:y")] * 2

    twice.collhub_producers = collhub_producers
    with pytest.raises(ComponentConflictError, match="twice"):
        pm.register(twice, name="twice")


def test_hook_with_unknown_argument_is_rejected():
    typo = types.ModuleType("typo")

    @hookimpl
    def collhub_before_step(step, colour):
        pass

    typo.collhub_before_step = collhub_before_step
    pm = create_manager(autoload=False)
    with pytest.raises(PluginLoadError, match="colour"):
        pm.register(typo, name="typo")


def test_observer_hooks_are_callable():
    seen = []
    obs = types.ModuleType("obs")

    @hookimpl
    def collhub_before_step(step):
        seen.append(("before", step))

    @hookimpl
    def collhub_on_step_error(step, error):
        seen.append(("error", step, str(error)))

    obs.collhub_before_step = collhub_before_step
    obs.collhub_on_step_error = collhub_on_step_error
    pm = create_manager(autoload=False)
    pm.register(obs, name="obs")
    pm.hook.collhub_before_step(step="s1")
    pm.hook.collhub_on_step_error(step="s1", error=ValueError("x"))
    assert seen == [("before", "s1"), ("error", "s1", "x")]


def test_factory_that_cannot_be_imported_is_a_plugin_error():
    mod = types.ModuleType("ghost")

    @hookimpl
    def collhub_consumers():
        return [ConsumerSpec(name="c", summary="s", factory="no_such_module_xyz:run")]

    mod.collhub_consumers = collhub_consumers
    pm = create_manager(autoload=False)
    pm.register(mod, name="ghost")
    with pytest.raises(PluginError, match="cannot load factory 'no_such_module_xyz:run'"):
        pm.run_consumer("ghost.c", object())


def test_wrong_return_type_is_reported(use_plugins):
    mod = types.ModuleType("liar")

    @hookimpl
    def collhub_producers():
        return [ProducerSpec(name="p", summary="s", factory=lambda params, ctx: "not an algorithm")]

    mod.collhub_producers = collhub_producers
    pm = create_manager(autoload=False)
    pm.register(mod, name="liar")
    with pytest.raises(PluginError, match="returned str, expected Algorithm"):
        pm.run_producer("liar.p", {})


def test_unregister_removes_components():
    mod = types.ModuleType("tmp")

    @hookimpl
    def collhub_producers():
        return [ProducerSpec(name="p", summary="s", factory="x:y")]

    mod.collhub_producers = collhub_producers
    pm = create_manager(autoload=False)
    pm.register(mod, name="tmp")
    pm.unregister("tmp")
    with pytest.raises(ComponentNotFoundError):
        pm.component("tmp.p")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm.register(mod, name="tmp")  # can be registered again
