"""The plugin registers through the `collhub` entry point and its components resolve."""

from __future__ import annotations

from hub.plugins import create_manager


def test_components_are_registered() -> None:
    pm = create_manager()
    ids = {c.id for c in pm.components()}
    assert {"astrasim.bundle", "astrasim.run", "astrasim.custom"} <= ids, [b for b in pm.broken()]
    spec = pm.component("astrasim.run")
    params = spec.load_params()(network="ring:8", size="1MiB")
    assert params.backend == "auto" and params.timeout == 600
    assert callable(spec.load_factory())
    assert callable(pm.component("astrasim.bundle").load_factory())
    assert callable(pm.component("astrasim.custom").load_factory())
