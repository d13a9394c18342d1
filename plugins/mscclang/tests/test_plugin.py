"""The plugin as collhub sees it: entry point, descriptors, params validation, Result."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.errors import ImportFormatError
from hub.plugins import RunContext

from .mscclang_corpus import EXAMPLES


@pytest.fixture(scope="module")
def pm():  # type: ignore[no-untyped-def]
    from hub.plugins import create_manager

    return create_manager()


def test_components_are_registered(pm) -> None:  # type: ignore[no-untyped-def]
    ids = {c.id for c in pm.components()}
    assert {"mscclang.ir", "mscclang.program", "mscclang.export"} <= ids
    assert not [b for b in pm.broken() if "mscclang" in str(b)]


def test_produce_and_consume_through_the_manager(pm, msccl_dir: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = msccl_dir / "mscclang_hier_allreduce_2x4_i1_Simple.xml"
    alg = pm.run_producer("mscclang.ir", {"path": str(src), "collective": "allreduce", "ranks": 8})
    res = pm.run_consumer("mscclang.export", alg, {"out": "h.xml", "target": "rccl"}, RunContext(workdir=tmp_path))
    assert res.component == "mscclang.export"
    assert Path(res.artifacts["xml"]) == tmp_path / "h.xml"
    assert res.metrics["gpus"] == 8 and res.metrics["steps"] == 144 and res.metrics["max_steps_per_tb"] == 2
    assert res.metrics["tbs"] == 112


def test_producer_checks_declared_collective_and_ranks(pm, msccl_dir: Path) -> None:  # type: ignore[no-untyped-def]
    src = msccl_dir / "mscclang_hier_allreduce_2x4_i1_Simple.xml"
    with pytest.raises(ImportFormatError, match="not a allgather"):
        pm.run_producer("mscclang.ir", {"path": str(src), "collective": "allgather"})
    with pytest.raises(ImportFormatError, match="ngpus=8, not ranks=4"):
        pm.run_producer("mscclang.ir", {"path": str(src), "ranks": 4})


def test_program_component_with_dict_args(pm, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prog = tmp_path / "p.py"
    prog.write_text(
        "from collhub_mscclang.lang import AllGather, Buffer, MSCCLProgram, args, chunk\n"
        "n = args().get('n', 2)\n"
        "with MSCCLProgram('direct_ag', AllGather(n, 1)):\n"
        "    for r in range(n):\n"
        "        for q in range(n):\n"
        "            chunk(r, Buffer.input, 0).copy(q, Buffer.output, r)\n"
    )
    alg = pm.run_producer("mscclang.program", {"path": str(prog), "args": {"n": 4}})
    assert alg.ranks == 4 and alg.meta.producer == "mscclang.program"
    from hub.verify import check

    check(alg)


def test_examples_directory_is_complete() -> None:
    names = {p.name for p in EXAMPLES.glob("*.py")}
    assert {
        "ring_allreduce.py",
        "hierarchical_allreduce.py",
        "alltoall_two_step.py",
        "allgather_recursive_doubling.py",
    } <= names


def test_import_without_verification_loads_neither_the_writer_nor_the_verifier(msccl_dir: Path) -> None:
    """The import command's start-up is part of its time: the export side, the other components'
    params models and hub.verify (for verify=false, and files without names) stay unimported."""
    import subprocess
    import sys

    code = (
        "import sys; from collhub_mscclang._components import produce_ir; "
        "from collhub_mscclang._params import IRParams; "
        f"produce_ir(IRParams(path={str(msccl_dir / 'mscclang_allreduce_ring_n64_ch1_i1_LL128.xml')!r}, "
        "names=False, verify=False), None); "
        "print(sorted(m for m in sys.modules if m.startswith(('hub.verify', 'collhub_mscclang._writer', "
        "'collhub_mscclang._params_', 'collhub_mscclang._program'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
