"""First-party plugins declare their params and links in their manifests (issue 30), so their
registry pages list every parameter and a link, and the declarations match the code (the
manifest check compares them with the params models when it imports the plugin)."""

from __future__ import annotations

import tomllib

import pytest

from tests.conftest import REPO

PLUGINS = ["mscclang", "mscclpp", "nccl", "astrasim", "taccl", "tacos", "forest", "replay"]


@pytest.mark.parametrize("name", PLUGINS)
def test_manifest_declares_params_and_links(name: str) -> None:
    from hub.plugins import get_manager

    path = REPO / "plugins" / name / f"collhub_{name}" / "collhub-plugin.toml"
    manifest = tomllib.loads(path.read_text())
    assert manifest["urls"] and all(v.startswith("https://") for v in manifest["urls"].values())
    manager = get_manager()
    for comp in manifest["components"]:
        declared = [p["name"] for p in comp["params"]]
        fields = list(manager.component(f"{name}.{comp['name']}").load_params().model_fields)
        assert declared == fields, f"{name}.{comp['name']}: manifest {declared}, code {fields}"
