"""Who belongs to a process group: as declared by the trace, or as observed in its collectives.

The rules, as ASTRA-sim 518bd51 reads a PyTorch-converted workload:

* a group is **declared** by rank 0's METADATA node ``## process_group:init ##`` (``pg_name`` ->
  member ranks, in order; ``Workload::issue_pytorch_pg_metadata``);
* **everyone**: a ``pg_name`` of ``""`` or ``"0"`` (``Workload::extract_comm_group``), and a
  declared group whose rank list is empty, mean every rank of the workload;
* a group's **observed** members are the ranks whose COMM_COLL nodes name it: what a trace
  without the METADATA node still says, and what ASTRA-sim's native collectives size their rings by.

Declared membership orders a collective's algorithm ranks (algorithm rank k = ``group[k]``);
observed membership only counts who takes part.
"""

from __future__ import annotations

from ..chakra import NodeType, Workload, process_groups

__all__ = ["EVERYONE", "declared_groups", "means_everyone", "observed_members"]

#: the ``pg_name`` values that mean every rank of the workload
EVERYONE: frozenset[str] = frozenset({"", "0"})


def means_everyone(pg_name: str | None) -> bool:
    """Whether a COMM_COLL node naming ``pg_name`` (None: none) involves every rank."""
    return pg_name is None or pg_name in EVERYONE


def declared_groups(wl: Workload) -> dict[str, tuple[int, ...]]:
    """pg_name -> member ranks in declared order, from the METADATA node, with ``""`` and ``"0"``
    (unless declared otherwise) and every declared empty rank list standing for all ranks."""
    everyone = tuple(range(wl.rank_count))
    groups: dict[str, tuple[int, ...]] = {"": everyone}
    for g in process_groups(wl):
        groups[g["pg_name"]] = tuple(g["ranks"]) if g["ranks"] else everyone
    groups.setdefault("0", everyone)
    return groups


def observed_members(wl: Workload, pg_name: str) -> set[int]:
    """The ranks whose COMM_COLL nodes name process group ``pg_name``."""
    return {r for r, nodes in enumerate(wl.ranks) for n in nodes if n.type == NodeType.COLL and n.pg_name == pg_name}
