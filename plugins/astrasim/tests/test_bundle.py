"""astrasim.bundle: the files ASTRA-sim reads, compared with the shared, known-good example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from collhub_astrasim import Dim, build_bundle, consume_bundle, parse_size
from collhub_astrasim._bundle import BundleParams
from hub.chakra import Algorithm, AlgorithmMeta, Buffer, Collective, Op, RankGraphBuilder, Workload, build_algorithm
from hub.errors import TraceFormatError, UsageError
from hub.plugins import RunContext

from .astrasim_helpers import attrs_of, decode_et, msccl_ring_allreduce

RING8 = [Dim("Ring", 8, 50.0, 500.0)]
MIB = 1 << 20


@pytest.fixture()
def ring_bundle(tmp_path: Path):
    return build_bundle(msccl_ring_allreduce(), out=tmp_path / "b", dims=RING8, size=MIB)


def test_system_network_memory_match_the_shared_example(ring_bundle, example: Path) -> None:
    ours = json.loads((ring_bundle.path / "system.json").read_text())
    theirs = json.loads((example / "system.json").read_text())
    for key, value in theirs.items():  # every setting of the known-good example, same value
        assert ours[key] == value, key
    # what we add: the pitfall guards (astra-sim.md §3), nothing else
    assert set(ours) - set(theirs) == {"endpoint-delay", "active-chunks-per-dimension"}
    assert ours["endpoint-delay"] >= 1 and ours["preferred-dataset-splits"] >= 1
    assert yaml.safe_load((ring_bundle.path / "network.yml").read_text()) == yaml.safe_load(
        (example / "network.yml").read_text()
    )
    memory = json.loads((ring_bundle.path / "memory.json").read_text())
    assert memory == json.loads((example / "memory.json").read_text())


def test_workload_ets_match_the_shared_example(ring_bundle, example: Path) -> None:
    assert ring_bundle.workload_prefix == "workload/all_reduce"
    for rank in range(8):
        gm_o, nodes_o = decode_et(ring_bundle.path / f"workload/all_reduce.{rank}.et")
        gm_t, nodes_t = decode_et(example / f"workload/all_reduce.{rank}.et")
        assert gm_o.version == gm_t.version == "0.0.4"
        assert len(nodes_o) == len(nodes_t) == 1
        o, t = nodes_o[0], nodes_t[0]
        assert (o.id, o.name, o.type, list(o.data_deps)) == (t.id, t.name, t.type, list(t.data_deps))
        assert (
            attrs_of(o)
            == attrs_of(t)
            == [("is_cpu_op", "bool_val", False), ("comm_type", "int64_val", 0), ("comm_size", "int64_val", MIB)]
        )
        # and in fact byte for byte
        assert (ring_bundle.path / f"workload/all_reduce.{rank}.et").read_bytes() == (
            example / f"workload/all_reduce.{rank}.et"
        ).read_bytes()


def test_algorithm_ets_have_the_reference_structure_and_wire_types(ring_bundle, example: Path) -> None:
    for rank in range(8):
        _, ours = decode_et(ring_bundle.path / f"algorithm/custom_allreduce.{rank}.et")
        _, theirs = decode_et(example / f"algorithm/custom_allreduce.{rank}.et")
        assert len(ours) == len(theirs) == 35
        for o, t in zip(ours, theirs, strict=False):
            assert (o.id, o.type, list(o.data_deps), list(o.ctrl_deps), o.duration_micros) == (
                t.id,
                t.type,
                list(t.data_deps),
                list(t.ctrl_deps),
                t.duration_micros,
            ), f"rank {rank} node {t.id}"
            # theirs also carries comm_type = NodeType on SEND/RECV, which nothing reads (chakra-et.md §4.3)
            assert attrs_of(o) == [a for a in attrs_of(t) if a[0] != "comm_type"], f"rank {rank} node {t.id}"


def test_every_message_attribute_has_the_feeder_wire_type(ring_bundle) -> None:
    for rank in range(8):
        gm, nodes = decode_et(ring_bundle.path / f"algorithm/custom_allreduce.{rank}.et")
        assert dict((n, v) for n, _, v in attrs_of(gm))["collective"] == "allreduce"
        for node in nodes:
            fields = {name: field for name, field, _ in attrs_of(node)}
            if node.type in (5, 6):
                assert fields["comm_size"] == "int64_val"
                assert fields["comm_tag"] == "int32_val"
                assert fields["comm_dst" if node.type == 5 else "comm_src"] == "int32_val"
            else:
                assert node.type == 4 and fields == {}


def test_unset_comp_duration_writes_no_duration(tmp_path: Path) -> None:
    alg = msccl_ring_allreduce(reduce_micros=-1)
    b = build_bundle(alg, out=tmp_path / "b", dims=RING8, size=MIB)
    _, nodes = decode_et(b.path / "algorithm/custom_allreduce.3.et")
    comps = [n for n in nodes if n.type == 4]
    assert len(comps) == 7 and all(n.duration_micros == 0 and len(n.attr) == 0 for n in comps)


def test_sizes_are_bound_like_the_model(tmp_path: Path) -> None:
    # 1000 B over 8 chunks: every chunk ceil(1000/8) = 125 B (hub.chakra.chunk_bytes rounds up)
    b = build_bundle(msccl_ring_allreduce(), out=tmp_path / "b", dims=RING8, size=1000)
    _, nodes = decode_et(b.path / "algorithm/custom_allreduce.0.et")
    assert {dict((k, v) for k, _, v in attrs_of(n))["comm_size"] for n in nodes if n.type in (5, 6)} == {125}


def test_files_run_script_and_readme(ring_bundle) -> None:
    files = set(ring_bundle.files)
    assert {"system.json", "network.yml", "memory.json", "run.sh", "README.md", "collhub-bundle.json"} <= files
    assert {f"algorithm/custom_allreduce.{r}.et" for r in range(8)} <= files
    script = (ring_bundle.path / "run.sh").read_text()
    assert "--workload-configuration=workload/all_reduce" in script and "--logging-folder=log" in script
    assert (ring_bundle.path / "run.sh").stat().st_mode & 0o111
    readme = (ring_bundle.path / "README.md").read_text()
    assert "./run.sh" in readme and "sys[i] finished" in readme
    system = json.loads((ring_bundle.path / "system.json").read_text())
    assert not any(Path(p).is_absolute() for p in system["all-reduce-implementation-custom"])


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("master", "all-reduce-implementation-custom"),
        ("2024-09", "all-reduce-implementation-chakra"),
        ("2024-04", "all-reduce-implementation-chakra-experimental"),
    ],
)
def test_custom_key_per_target(tmp_path: Path, target: str, key: str) -> None:
    b = build_bundle(msccl_ring_allreduce(), out=tmp_path / "b", dims=RING8, size=MIB, target=target)
    system = json.loads((b.path / "system.json").read_text())
    assert system[key] == ["algorithm/custom_allreduce"]
    assert [k for k in system if "implementation" in k] == [key]


def _tiny(coll: Collective, n: int = 2) -> Algorithm:
    builders = []
    for r in range(n):
        b = RankGraphBuilder(r)
        b.send((r + 1) % n, src=(Buffer.INPUT, 0))
        b.recv((r - 1) % n, dst=(Buffer.OUTPUT, 0), op=Op.COPY)
        builders.append(b)
    return build_algorithm(AlgorithmMeta(collective=coll, ranks=n, in_chunks=1, out_chunks=1), builders)


@pytest.mark.parametrize("coll", [Collective.BROADCAST, Collective.REDUCE, Collective.GATHER, Collective.SCATTER])
def test_refuses_collectives_astrasim_cannot_run(tmp_path: Path, coll: Collective) -> None:
    with pytest.raises(UsageError, match=f"cannot run a {coll.value}"):
        build_bundle(_tiny(coll), out=tmp_path / "b", dims=[Dim("Ring", 2, 50, 500)], size=64)
    assert not (tmp_path / "b").exists() and list(tmp_path.iterdir()) == []


def test_reduce_scatter_only_on_master(tmp_path: Path) -> None:
    dims = [Dim("Ring", 2, 50, 500)]
    build_bundle(_tiny(Collective.REDUCESCATTER), out=tmp_path / "m", dims=dims, size=64)
    with pytest.raises(UsageError, match="reduce-scatter custom collectives need ASTRA-sim master"):
        build_bundle(_tiny(Collective.REDUCESCATTER), out=tmp_path / "o", dims=dims, size=64, target="2024-09")


def test_aware_backend_refuses_multi_dim(tmp_path: Path) -> None:
    dims = [Dim("Ring", 4, 50, 500), Dim("Ring", 2, 50, 500)]
    with pytest.raises(UsageError, match="congestion-aware backend accepts only 1-D"):
        build_bundle(msccl_ring_allreduce(), out=tmp_path / "b", dims=dims, size=MIB, backend="aware")
    b = build_bundle(msccl_ring_allreduce(), out=tmp_path / "b", dims=dims, size=MIB, backend="unaware")
    assert yaml.safe_load((b.path / "network.yml").read_text())["npus_count"] == [4, 2]


def test_bad_inputs_give_one_line_errors(tmp_path: Path) -> None:
    alg = msccl_ring_allreduce()
    with pytest.raises(UsageError, match="8 ranks but the network has 4 NPUs"):
        build_bundle(alg, out=tmp_path / "a", dims=[Dim("Ring", 4, 50, 500)], size=MIB)
    with pytest.raises(UsageError, match="no message sizes"):
        build_bundle(alg, out=tmp_path / "a", dims=RING8)
    with pytest.raises(UsageError, match="endpoint-delay must be >= 1"):
        build_bundle(alg, out=tmp_path / "a", dims=RING8, size=MIB, system={"endpoint-delay": 0})
    with pytest.raises(UsageError, match="preferred-dataset-splits"):
        build_bundle(alg, out=tmp_path / "a", dims=RING8, size=MIB, system={"preferred-dataset-splits": 0})
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_existing_out_needs_overwrite(ring_bundle) -> None:
    with pytest.raises(UsageError, match="not empty"):
        build_bundle(msccl_ring_allreduce(), out=ring_bundle.path, dims=RING8, size=MIB)
    b = build_bundle(msccl_ring_allreduce(), out=ring_bundle.path, dims=RING8, size=2 * MIB, overwrite=True)
    _, nodes = decode_et(b.path / "algorithm/custom_allreduce.0.et")
    assert dict((k, v) for k, _, v in attrs_of(nodes[0]))["comm_size"] == 2 * MIB // 8
    assert [p.name for p in b.path.parent.iterdir()] == ["b"]


def test_export_error_names_rank_and_node(tmp_path: Path) -> None:
    b0, b1 = RankGraphBuilder(0), RankGraphBuilder(1)
    b0.send(0, src=(Buffer.INPUT, 0))  # to itself
    b1.recv(0, dst=(Buffer.INPUT, 0))
    alg = build_algorithm(AlgorithmMeta(collective=Collective.ALLREDUCE, ranks=2, in_chunks=1, out_chunks=1), [b0, b1])
    # a value every consumer relies on: checked by the shared hub.chakra.check_algorithm (exit 3)
    with pytest.raises(TraceFormatError, match=r"rank 0, node 0: attribute comm_dst = 0 is not another rank"):
        build_bundle(alg, out=tmp_path / "b", dims=[Dim("Ring", 2, 50, 500)], size=64)
    assert list(tmp_path.iterdir()) == []


def test_workload_with_et_prefix_and_native_mappings(tmp_path: Path, example: Path) -> None:
    wl = Workload.single_collective(Collective.ALLREDUCE, 8, MIB)
    b = build_bundle(
        wl, out=tmp_path / "c", dims=RING8, algorithm_for={"all_reduce": str(example / "algorithm/custom_allreduce")}
    )
    for r in range(8):  # copied byte for byte
        assert (b.path / f"algorithm/custom_allreduce.{r}.et").read_bytes() == (
            example / f"algorithm/custom_allreduce.{r}.et"
        ).read_bytes()
    b = build_bundle(wl, out=tmp_path / "n", dims=RING8, algorithm_for={"allreduce": "native:ring"})
    system = json.loads((b.path / "system.json").read_text())
    assert system["all-reduce-implementation"] == ["ring"]
    two_dims = [Dim("Ring", 4, 50, 500), Dim("Switch", 2, 25, 1000)]
    b = build_bundle(wl, out=tmp_path / "n2", dims=two_dims, algorithm_for={"allreduce": "native:oneRing"})
    assert json.loads((b.path / "system.json").read_text())["all-reduce-implementation"] == ["oneRing", "oneRing"]
    with pytest.raises(UsageError, match="unknown native ASTRA-sim implementation 'rings'"):
        build_bundle(wl, out=tmp_path / "x", dims=RING8, algorithm_for={"allreduce": "native:rings"})
    b = build_bundle(wl, out=tmp_path / "d", dims=RING8)  # default: the built-in ring, as hub.simulate
    assert b.implementations == {"allreduce": "custom:algorithm/custom_allreduce"}
    _, nodes = decode_et(b.path / "algorithm/custom_allreduce.0.et")
    assert len(nodes) > 0 and all(n.type in (4, 5, 6) for n in nodes)
    with pytest.raises(UsageError, match="names alltoall, but the workload has no alltoall"):
        build_bundle(wl, out=tmp_path / "x", dims=RING8, algorithm_for={"alltoall": "direct"})
    with pytest.raises(UsageError, match="cannot run a reduce"):
        build_bundle(Workload.single_collective(Collective.REDUCE, 8, MIB), out=tmp_path / "x", dims=RING8)
    wl.ranks[2][0].pg_name = "7"  # a group the workload does not declare (no METADATA node)
    with pytest.raises(UsageError, match="rank 2, node 0: process group '7' is not declared"):
        build_bundle(wl, out=tmp_path / "x", dims=RING8, algorithm_for={"allreduce": "native:ring"})
    wl.ranks[2][0].pg_name = "tp"  # ASTRA-sim's comm-group file takes integer names only
    with pytest.raises(UsageError, match="process group 'tp' is not a positive integer"):
        build_bundle(wl, out=tmp_path / "x", dims=RING8, algorithm_for={"allreduce": "native:ring"})


def test_consumer_with_topology_string(tmp_path: Path, example: Path) -> None:
    ctx = RunContext(workdir=tmp_path)
    params = BundleParams(out="bundle", network="ring:8", size="1MiB")
    result = consume_bundle(msccl_ring_allreduce(), params, ctx)
    assert result.component == "astrasim.bundle" and result.artifacts["bundle"] == "bundle"
    network = yaml.safe_load((tmp_path / "bundle/network.yml").read_text())
    assert network == yaml.safe_load((example / "network.yml").read_text())
    params = BundleParams(out="b2", network=str(example / "network.yml"), size=MIB)
    consume_bundle(msccl_ring_allreduce(), params, ctx)
    assert (tmp_path / "b2/network.yml").read_text() == (tmp_path / "bundle/network.yml").read_text()
    with pytest.raises(UsageError, match="not a dimensional topology"):
        consume_bundle(msccl_ring_allreduce(), BundleParams(out="b3", network="mesh:4x2", size=MIB), ctx)


@pytest.mark.parametrize(
    ("text", "value"),
    [(1048576, MIB), ("1MiB", MIB), ("1M", MIB), ("1MB", 10**6), ("64KiB", 65536), ("3", 3), ("2.2MB", 2_200_000)],
)
def test_parse_size(text: object, value: int) -> None:
    assert parse_size(text) == value  # type: ignore[arg-type]


def test_parse_size_rejects_garbage() -> None:
    with pytest.raises(UsageError):
        parse_size("lots")
    with pytest.raises(UsageError):
        parse_size(0)


@pytest.mark.parametrize(("reduce_micros", "measured"), [(7, 90174), (-1, 41181)])
def test_bundle_keeps_the_timing_astrasim_measured(tmp_path: Path, reduce_micros: int, measured: int) -> None:
    """Read back with the core reader and simulated by hub.simulate, the bundle's ETs give the times
    real ASTRA-sim printed for these ETs on both backends (astra-sim.md §9: 14 x 2941 ns plus 7 COMPs
    of 7 us, or of 1 ns when the duration is unset)."""
    from hub.chakra import read_algorithm
    from hub.sim import simulate

    b = build_bundle(msccl_ring_allreduce(reduce_micros=reduce_micros), out=tmp_path / "b", dims=RING8, size=MIB)
    assert b.predicted_ns == {"unaware": measured, "aware": measured}
    assert f"sys[i] finished, {measured} cycles" in (b.path / "README.md").read_text()
    back = read_algorithm(b.path / "algorithm/custom_allreduce")
    for mode in ("unaware", "aware"):
        assert simulate(back, "ring:8", mode=mode).time_ns == measured


@pytest.mark.parametrize("name", ["ring", "direct", "halving_doubling", "double_binary_tree"])
def test_builtin_algorithms_keep_their_simulated_time(tmp_path: Path, name: str) -> None:
    """For built-in algorithms the ETs in the bundle, read back, simulate to the same ns as the
    in-memory algorithm: the bundle charges ASTRA-sim exactly what hub.simulate charges."""
    from hub.chakra import read_algorithm
    from hub.plugins import create_manager
    from hub.sim import simulate

    pm = create_manager()
    alg = pm.run_producer(f"hub.{name}", {"collective": "allreduce", "ranks": 8}, RunContext(workdir=tmp_path))
    b = build_bundle(alg, out=tmp_path / "b", dims=RING8, size=MIB)
    back = read_algorithm(b.path / "algorithm/custom_allreduce")
    for mode in ("unaware", "aware"):
        assert simulate(back, "ring:8", mode=mode).time_ns == simulate(alg, "ring:8", size=MIB, mode=mode).time_ns


def test_a_users_workload_is_rewritten_byte_for_byte(tmp_path: Path, example: Path) -> None:
    from hub.chakra import read_workload

    wl = read_workload(example / "workload/all_reduce")
    b = build_bundle(
        wl, out=tmp_path / "b", dims=RING8, algorithm_for={"allreduce": str(example / "algorithm/custom_allreduce")}
    )
    for r in range(8):
        ours = (b.path / f"workload/workload.{r}.et").read_bytes()
        assert ours == (example / f"workload/all_reduce.{r}.et").read_bytes()
    system = json.loads((b.path / "system.json").read_text())
    assert system["all-reduce-implementation-custom"] == ["algorithm/custom_allreduce"]
