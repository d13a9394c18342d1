"""The testing kit for plugin authors (``hub.testing``): the CLI runner fixture, the producer
check over rank counts and collectives, and the manifest check. Each must be able to fail."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from hub import Algorithm, AlgorithmMeta, Buffer, Collective, RankGraphBuilder, RunContext
from hub.chakra import build_algorithm
from hub.errors import AlgorithmError
from hub.plugins import ProducerSpec, hookimpl
from hub.testing import CliResult, check_manifest, check_producer

REPO = Path(__file__).resolve().parents[1]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    collective: str = "broadcast"
    ranks: int = Field(..., ge=2)


def _flat_broadcast(params: _Params, ctx: RunContext, *, skip_last: bool = False) -> Algorithm:
    n = params.ranks
    if n % 2:
        raise AlgorithmError(f"even rank counts only, not {n}")
    b = [RankGraphBuilder(r) for r in range(n)]
    for peer in range(1, n - 1 if skip_last else n):  # skip_last: the last rank never gets the data
        b[0].send(peer, src=(Buffer.INPUT, 0))
        b[peer].recv(0, dst=(Buffer.OUTPUT, 0))
    meta = AlgorithmMeta(
        collective=Collective.BROADCAST,
        ranks=n,
        in_chunks=1,
        out_chunks=1,
        inplace=True,
        root=0,
        name=f"flat{n}",
        producer="kit.flat",
    )
    return build_algorithm(meta, b)


def _broken(params: _Params, ctx: RunContext) -> Algorithm:
    return _flat_broadcast(params, ctx, skip_last=True)


def _plugin() -> Any:
    @hookimpl
    def collhub_producers() -> list[ProducerSpec]:
        return [
            ProducerSpec(
                name=name,
                summary="flat broadcast",
                factory=f,
                params=_Params,
                collectives=frozenset({"broadcast"}),
                min_ranks=2,
                max_ranks=8,
            )
            for name, f in (("flat", _flat_broadcast), ("broken", _broken))
        ]

    return SimpleNamespace(collhub_producers=collhub_producers)


def test_cli_fixture_runs_the_command_line_against_the_test_manager(
    collhub_cli: Any, collhub_tmp_plugin: Any, tmp_path: Path
) -> None:
    collhub_tmp_plugin(_plugin(), name="kit")
    r = collhub_cli("produce", "kit.flat", "--set", "ranks=4", "--out", "out/b")
    assert isinstance(r, CliResult) and r.exit_code == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"b.{i}.et" for i in range(4)]
    v = collhub_cli("trace", "verify", "out/b")
    assert v.exit_code == 0, v.stderr
    bad = collhub_cli("produce", "kit.flat", "--set", "ranks=3", "--out", "out/c")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: even rank counts only, not 3"), bad.stderr
    unknown = collhub_cli("produce", "kit.nope", "--out", "x")
    assert unknown.exit_code == 4 and "unknown component 'kit.nope'" in unknown.stderr and unknown.stdout == ""


def test_check_producer_covers_ranks_and_collectives(collhub_pm: Any, collhub_tmp_plugin: Any) -> None:
    collhub_tmp_plugin(_plugin(), name="kit")
    # odd counts are refused by the producer, 9 is above max_ranks: both left out
    assert check_producer("kit.flat", range(2, 10)) == [("broadcast", n) for n in (2, 4, 6, 8)]
    checked = check_producer("hub.ring", [3, 4], collectives=["allreduce", "allgather"])
    assert checked == [("allreduce", 3), ("allreduce", 4), ("allgather", 3), ("allgather", 4)]


def test_check_producer_fails_listing_every_wrong_case(collhub_pm: Any, collhub_tmp_plugin: Any) -> None:
    collhub_tmp_plugin(_plugin(), name="kit")
    with pytest.raises(AssertionError) as info:
        check_producer("kit.broken", range(2, 7))
    text = str(info.value)
    assert text.startswith("kit.broken: 3 failing case(s):")
    for n in (2, 4, 6):
        assert f"broadcast at {n} ranks: " in text
    with pytest.raises(AssertionError, match="refused: even rank counts only, not 3"):
        check_producer("kit.flat", [3], allow_refusal=False)
    with pytest.raises(AssertionError, match="no case ran"):
        check_producer("kit.flat", [3, 5])


def test_check_manifest_passes_a_first_party_plugin_and_fails_a_broken_one(tmp_path: Path) -> None:
    from hub.plugins._scaffold import scaffold_plugin

    ok = check_manifest(REPO / "plugins" / "mscclang")
    assert ok.ok and ok.imports_checked and ok.distribution == "collhub-mscclang"
    scaffold_plugin("kit_demo", tmp_path)
    project = tmp_path / "collhub-kit-demo"
    assert check_manifest(project).ok  # the scaffold is valid as written
    manifest = project / "collhub_kit_demo" / "collhub-plugin.toml"
    manifest.write_text(manifest.read_text().replace('name = "flat_broadcast"', 'name = "flat_bcast"'))
    with pytest.raises(AssertionError) as info:
        check_manifest(project)
    assert "manifest problem(s)" in str(info.value) and "flat_bcast" in str(info.value)
