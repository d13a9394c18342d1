"""read_trace's choice between an algorithm and a workload for sets without collhub's metadata
(ASTRA-sim's examples, PyTorch-converted workloads): the compiled pass that reads rank 0's node
types must answer exactly what decoding every node with the general decoder (the reference) does."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.chakra import Algorithm, Workload, read_trace
from hub.chakra._fileset import rank_path
from hub.chakra._load import load
from hub.chakra._meta import frame_file
from hub.chakra._reader import _compiled_kinds, _decoded_kinds, trace_kind

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SETS = {
    "astra-sim/custom-ring-allreduce-8npus-1MB/algorithm/custom_allreduce": "algorithm",
    "astra-sim/custom-ring-allreduce-8npus-1MB/workload/all_reduce": "workload",
    "chakra-pytorch/coll4/coll4": "workload",
    "chakra-pytorch/ddp2/ddp2": "workload",
    "chakra-pytorch/dlrm8/dlrm": "workload",
}


@pytest.mark.filterwarnings("ignore::hub.chakra.DanglingDependencyWarning")  # dlrm8 has them
@pytest.mark.parametrize("name", sorted(SETS))
def test_compiled_node_types_are_the_general_decoders(name: str) -> None:
    prefix = DATA / name
    if not rank_path(prefix, 0).is_file():
        pytest.skip(f"{prefix} is not in ../shared/data")
    first = rank_path(prefix, 0)
    data = load(first, 0)
    starts, ends = frame_file(data, first, 0)
    reference = _decoded_kinds(data, starts, ends, first)
    compiled = _compiled_kinds(data, starts, ends)
    assert compiled is None or compiled == reference  # None: refused, the general loop decides
    assert trace_kind(prefix) == SETS[name]
    if SETS[name] == "algorithm":
        assert compiled is not None  # ASTRA-sim's own algorithm files take the compiled pass
        assert isinstance(read_trace(prefix), Algorithm)
    else:
        assert isinstance(read_trace(prefix), Workload)


def test_a_truncated_node_is_still_reported_by_the_general_decoder(tmp_path: Path) -> None:
    from hub.errors import TraceFormatError

    src = rank_path(DATA / "astra-sim/custom-ring-allreduce-8npus-1MB/algorithm/custom_allreduce", 0)
    if not src.is_file():
        pytest.skip("the ASTRA-sim example is not in ../shared/data")
    data = src.read_bytes()
    starts, ends = frame_file(data, src, 0)
    # the last node's length prefix kept, its body cut short by one byte
    bad = tmp_path / "t.0.et"
    bad.write_bytes(data[: int(ends[-1]) - 1])
    with pytest.raises(TraceFormatError) as info:
        trace_kind(tmp_path / "t")
    assert "t.0.et" in str(info.value) and "\n" not in str(info.value)
