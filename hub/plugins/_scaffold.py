"""``collhub plugins new NAME``: write a ready-to-install third-party plugin package.

The package has a ``pyproject.toml`` declaring the ``collhub`` entry point and the
``collhub.manifest`` one, the static manifest ``collhub-plugin.toml`` (so ``collhub plugins
validate`` and ``collhub registry build`` accept the package as it is), a producer component
(a flat broadcast: the root sends its data to every other rank), and a pytest test that uses the
testing kit (``collhub_tmp_plugin``) and the verifier, so ``pip install -e . && pytest`` passes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import UsageError

__all__ = ["scaffold_plugin"]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "collhub plugin {name}: a flat broadcast producer (edit me)"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["collhub>=0.1"]

[project.optional-dependencies]
test = ["pytest>=8.0"]

# The entry point collhub discovers; its name ({name}) prefixes every component id: {name}.flat_broadcast
[project.entry-points.collhub]
{name} = "{pkg}.plugin"

# Where the static manifest is ({pkg}/collhub-plugin.toml): the registry, `collhub search` and
# `collhub plugins validate` read it without importing the plugin
[project.entry-points."collhub.manifest"]
{name} = "{pkg}"

[tool.setuptools.packages.find]
include = ["{pkg}", "{pkg}.*"]

[tool.setuptools.package-data]
{pkg} = ["collhub-plugin.toml"]
"""

_MANIFEST = """\
# Static manifest of {dist}: read by the registry and `collhub search` without importing the
# plugin. Keep it in step with plugin.py; `collhub plugins validate . --imports` compares the two.
name = "{dist}"
plugin = "{name}"
api_version = "1.0"
requires_hub = ">=0.1"
keywords = ["broadcast"]
lifecycle = "active"

# homepage and source links for the registry's page of this plugin
# [urls]
# homepage = "https://example.org/{dist}"
# source = "https://github.com/you/{dist}"

[[components]]
kind = "producer"
name = "flat_broadcast"
summary = "Broadcast: the root sends its whole buffer to every other rank at once"
collectives = ["broadcast"]
outputs = ["algorithm"]
# shown on the registry's page; `collhub plugins validate . --imports` checks them against the model
params = [
  {{name = "collective", type = "str", default = "broadcast", description = "Only broadcast is supported"}},
  {{name = "ranks", type = "int", required = true, description = "Number of ranks"}},
  {{name = "root", type = "int", default = 0, description = "Rank that owns the data"}},
  {{name = "chunks", type = "int", default = 1, description = "Chunks per rank buffer"}},
]
"""

_README = """\
# {dist}

A [collhub](https://github.com/) plugin. Component: `{name}.flat_broadcast`.

```bash
pip install -e '.[test]'
pytest
collhub plugins info {name}.flat_broadcast
collhub produce {name}.flat_broadcast --set ranks=4 --out out/bcast
collhub trace verify out/bcast
```
"""

_INIT = '''\
"""collhub plugin {name}."""
'''

_PLUGIN = '''\
"""Registration: only descriptors with "module:attr" strings, so listing imports nothing heavy."""

from __future__ import annotations

from hub.plugins import ProducerSpec, hookimpl

#: The plugin API this package was written against (major.minor).
COLLHUB_PLUGIN_API = "1.0"


@hookimpl
def collhub_producers() -> list[ProducerSpec]:
    return [
        ProducerSpec(
            name="flat_broadcast",
            summary="Broadcast: the root sends its whole buffer to every other rank at once",
            factory="{pkg}._producer:produce",
            params="{pkg}._producer:FlatBroadcastParams",
            collectives=frozenset({{"broadcast"}}),
            min_ranks=2,
        )
    ]
'''

_PRODUCER = '''\
"""The producer: called only when the component runs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hub import Algorithm, AlgorithmMeta, Buffer, Collective, RankGraphBuilder, RunContext
from hub.chakra import build_algorithm


class FlatBroadcastParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    collective: str = Field("broadcast", description="Only broadcast is supported")
    ranks: int = Field(..., ge=2, description="Number of ranks")
    root: int = Field(0, ge=0, description="Rank that owns the data")
    chunks: int = Field(1, ge=1, description="Chunks per rank buffer")


def produce(params: FlatBroadcastParams, ctx: RunContext) -> Algorithm:
    n, root, c = params.ranks, params.root, params.chunks
    if root >= n:
        from hub.errors import AlgorithmError

        raise AlgorithmError(f"root {{root}} is not a rank of {{n}}", hint=f"use --set root=0..{{n - 1}}")
    builders = [RankGraphBuilder(r) for r in range(n)]
    for peer in range(n):
        if peer == root:
            continue
        # In-place broadcast: output aliases input, so the root's data is already in place.
        builders[root].send(peer, src=(Buffer.INPUT, 0), count=c)
        builders[peer].recv(root, dst=(Buffer.OUTPUT, 0), count=c)
    meta = AlgorithmMeta(
        collective=Collective.BROADCAST, ranks=n, in_chunks=c, out_chunks=c, inplace=True,
        root=root, name=f"flat_broadcast_n{{n}}", producer="{name}.flat_broadcast",
    )
    return build_algorithm(meta, builders)
'''

_TEST = '''\
"""Tests with collhub's testing kit (the pytest plugin ``hub.testing``)."""

from __future__ import annotations

import {pkg}.plugin as plugin


def test_registers_component(collhub_pm, collhub_tmp_plugin):
    collhub_tmp_plugin(plugin, name="{name}")
    spec = collhub_pm.component("{name}.flat_broadcast")
    assert spec.collectives == frozenset({{"broadcast"}})


def test_produces_a_correct_broadcast(collhub_pm, collhub_tmp_plugin):
    collhub_tmp_plugin(plugin, name="{name}")
    alg = collhub_pm.run_producer("{name}.flat_broadcast", {{"ranks": 4, "root": 1}})
    assert alg.ranks == 4
    # root 1 sends to 3 peers; each peer receives once: 6 nodes
    assert alg.node_count() == 6
    from hub.verify import check

    check(alg)  # raises a VerificationError naming every problem
'''


#: The tests of docs/plugins.md ("Testing with the kit"), word for word for the plugin ``mine``
#: (tests/cli/test_cli.py checks that the document shows exactly this file).
_KIT_TEST = """\
from pathlib import Path

import {pkg}.plugin as plugin
from hub.testing import check_manifest, check_producer

PROJECT = Path(__file__).resolve().parents[1]


def test_produces(collhub_pm, collhub_tmp_plugin):
    collhub_tmp_plugin(plugin, name="{name}")  # registered for this test only
    alg = collhub_pm.run_producer("{name}.flat_broadcast", {{"ranks": 4}})
    from hub.verify import check

    check(alg)  # structure, progress, semantics


def test_every_rank_count(collhub_pm, collhub_tmp_plugin):
    collhub_tmp_plugin(plugin, name="{name}")
    check_producer("{name}.flat_broadcast", range(2, 17))  # every declared collective, verified


def test_command_line(collhub_cli, collhub_tmp_plugin):
    collhub_tmp_plugin(plugin, name="{name}")
    r = collhub_cli("produce", "{name}.flat_broadcast", "--set", "ranks=4", "--out", "out/b")
    assert r.exit_code == 0, r.stderr
    assert collhub_cli("trace", "verify", "out/b").exit_code == 0


def test_manifest():
    check_manifest(str(PROJECT))  # the manifest matches what the code registers


def test_pipeline(collhub_run_pipeline, collhub_tmp_plugin):
    collhub_tmp_plugin(plugin, name="{name}")
    run = collhub_run_pipeline((PROJECT / "examples" / "{name}.yaml").read_text())
    assert run.ok
"""

_EXAMPLE = """\
# The plugin's producer in a pipeline: a flat broadcast on 2, 4 and 8 ranks, simulated on a switch.
# Run it (once the package is installed):   collhub run examples/{name}.yaml
version: 1
name: {name}-example
matrix:
  ranks: [2, 4, 8]
sources:
  flat_broadcast: {{producer: {name}.flat_broadcast, params: {{ranks: "${{ranks}}"}}}}
consumers:
  sim: {{use: hub.simulate, params: {{network: "switch:${{ranks}}", size: 1MiB}}}}
"""


def scaffold_plugin(name: str, directory: Path) -> list[Path]:
    """Create ``<directory>/collhub-<name>/`` and return the files written."""
    if not _NAME_RE.match(name):
        raise UsageError(
            f"plugin name {name!r} must be lowercase letters, digits and '_' (it prefixes component ids)",
            hint="e.g. collhub plugins new my_algos",
        )
    if name == "hub":
        raise UsageError("the plugin name 'hub' is reserved for collhub's own components")
    dist = f"collhub-{name.replace('_', '-')}"
    pkg = f"collhub_{name}"
    root = directory / dist
    if root.exists():
        raise UsageError(f"{root} already exists", hint="choose another --dir or remove it")
    fields = {"name": name, "dist": dist, "pkg": pkg}
    files = {
        "pyproject.toml": _PYPROJECT,
        "README.md": _README,
        f"{pkg}/__init__.py": _INIT,
        f"{pkg}/plugin.py": _PLUGIN,
        f"{pkg}/collhub-plugin.toml": _MANIFEST,
        f"{pkg}/_producer.py": _PRODUCER,
        "tests/test_plugin.py": _TEST,
        "tests/test_kit.py": _KIT_TEST,
        f"examples/{name}.yaml": _EXAMPLE,
    }
    # Build in a sibling temp dir and rename, so a failure never leaves a half-written package.
    tmp = directory / f".{dist}.{os.getpid()}.tmp"
    written: list[Path] = []
    try:
        for rel, template in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template.format(**fields))
        os.replace(tmp, root)
    except OSError as exc:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        raise UsageError(f"cannot create {root}: {exc.strerror or exc}") from None
    for rel in files:
        written.append(root / rel)
    return written
