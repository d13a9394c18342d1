"""The critical path's one-pass form (nodes after their dependencies) against the depth-first
search it stands in for: same length, same chain, same ties, on random ranks."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from hub.chakra import NodeType, WorkloadNode
from hub.chakra._workload_summary import _critical_path, _critical_path_dfs, _critical_path_in_order


@st.composite
def _rank(draw: st.DrawFn) -> list[WorkloadNode]:
    n = draw(st.integers(0, 12))
    ids = draw(st.permutations(range(20)))[:n]
    nodes = []
    for i, nid in enumerate(ids):
        earlier = ids[:i]
        pool = earlier + [99] + (ids if draw(st.booleans()) and i % 5 == 4 else [])  # 99: absent
        nodes.append(
            WorkloadNode(
                id=nid,
                name="n",
                type=draw(st.sampled_from([NodeType.COMP, NodeType.COMP, NodeType.COLL])),
                deps=draw(st.lists(st.sampled_from(pool), max_size=3)),
                duration_micros=draw(st.integers(-1, 3)),  # small: many ties
            )
        )
    return nodes


@settings(max_examples=300, deadline=None, database=None)
@given(_rank())
def test_the_one_pass_path_is_the_searchs(nodes: list[WorkloadNode]) -> None:
    fast = _critical_path_in_order(nodes)
    if fast is not None:
        assert fast == _critical_path_dfs(nodes)
    assert _critical_path(nodes) == _critical_path_dfs(nodes)


def test_a_later_dependency_takes_the_search() -> None:
    nodes = [
        WorkloadNode(id=1, name="a", type=NodeType.COMP, deps=[2], duration_micros=5),
        WorkloadNode(id=2, name="b", type=NodeType.COMP, duration_micros=7),
    ]
    assert _critical_path_in_order(nodes) is None
    assert _critical_path(nodes) == (12, [2, 1])
