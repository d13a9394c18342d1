"""A small, independent symbolic executor used as a test oracle.

It follows docs/CONTRACTS.md only (node semantics, FIFO matching per (src, dst, tag), in-place
aliasing and postconditions), not the plugin's code, so that tests do not depend on the core
verifier being present. Each slot holds the set of (rank, chunk) contributions it carries.
"""

from __future__ import annotations

from collections import deque

from hub.chakra import Algorithm, Buffer, Collective, NodeType, Op

Slot = frozenset


def run(alg: Algorithm) -> list[str]:
    """Execute ``alg`` symbolically; return a list of problems (empty = correct)."""
    m = alg.meta
    n, cin, cout = m.ranks, m.in_chunks, m.out_chunks
    coll = m.collective

    def loc(rank: int, buf: int, off: int) -> tuple[int, int]:
        """Physical (buffer, offset) after in-place aliasing."""
        if m.inplace:
            if coll in (Collective.ALLREDUCE, Collective.ALLTOALL, Collective.BROADCAST, Collective.REDUCE):
                if buf == Buffer.OUTPUT:
                    return int(Buffer.INPUT), off
            elif coll is Collective.ALLGATHER and buf == Buffer.INPUT:
                return int(Buffer.OUTPUT), rank * cin + off
            elif coll is Collective.REDUCESCATTER and buf == Buffer.OUTPUT:
                return int(Buffer.INPUT), rank * cout + off
        return buf, off

    mem: list[dict[tuple[int, int], Slot | None]] = []
    for r in range(n):
        d: dict[tuple[int, int], Slot | None] = {}
        for j in range(cin):
            d[loc(r, int(Buffer.INPUT), j)] = Slot({(r, j)})
        mem.append(d)
    problems: list[str] = []

    def read(r: int, b: int, o: int, c: int) -> list[Slot | None]:
        return [mem[r].get(loc(r, b, o + k)) for k in range(c)]

    def write(r: int, b: int, o: int, vals: list[Slot | None], reduce: bool, where: str) -> None:
        for k, v in enumerate(vals):
            key = loc(r, b, o + k)
            if reduce:
                cur = mem[r].get(key)
                if cur is None or v is None:
                    problems.append(f"{where}: reduce with an undefined operand")
                    mem[r][key] = None
                    continue
                if cur & v:
                    problems.append(f"{where}: contribution counted twice")
                mem[r][key] = cur | v
            else:
                mem[r][key] = v

    g = alg.graphs
    indeg = [[int(g[r].dep_ptr[i + 1] - g[r].dep_ptr[i]) for i in range(len(g[r]))] for r in range(n)]
    succ: list[list[list[int]]] = [[[] for _ in range(len(g[r]))] for r in range(n)]
    for r in range(n):
        for i in range(len(g[r])):
            for d in g[r].deps_of(i):
                succ[r][int(d)].append(i)
    ready = [deque(i for i in range(len(g[r])) if indeg[r][i] == 0) for r in range(n)]
    fifo: dict[tuple[int, int, int], deque] = {}
    blocked: list[list[int]] = [[] for _ in range(n)]
    done = 0
    total = sum(len(x) for x in g)
    progress = True
    while progress:
        progress = False
        for r in range(n):
            gr = g[r]
            q = ready[r]
            q.extend(blocked[r])
            blocked[r] = []
            while q:
                i = q.popleft()
                kind = int(gr.kind[i])
                where = f"rank {r} node {i}"
                cnt = int(gr.count[i])
                if kind == NodeType.SEND:
                    vals = read(r, int(gr.src_buf[i]), int(gr.src_off[i]), cnt)
                    fifo.setdefault((r, int(gr.peer[i]), int(gr.tag[i])), deque()).append((cnt, vals))
                elif kind == NodeType.RECV:
                    f = fifo.get((int(gr.peer[i]), r, int(gr.tag[i])))
                    if not f:
                        blocked[r].append(i)
                        continue
                    c2, vals = f.popleft()
                    if c2 != cnt:
                        problems.append(f"{where}: received {c2} chunks, expected {cnt}")
                    write(r, int(gr.dst_buf[i]), int(gr.dst_off[i]), vals, int(gr.op[i]) == Op.REDUCE, where)
                elif kind == NodeType.COMP and int(gr.op[i]) != Op.NONE:
                    vals = read(r, int(gr.src_buf[i]), int(gr.src_off[i]), cnt)
                    write(r, int(gr.dst_buf[i]), int(gr.dst_off[i]), vals, int(gr.op[i]) == Op.REDUCE, where)
                done += 1
                progress = True
                for s in succ[r][i]:
                    indeg[r][s] -= 1
                    if indeg[r][s] == 0:
                        q.append(s)
    if done != total:
        problems.append(f"deadlock: {total - done} of {total} nodes never ran")
        return problems

    def out(r: int, j: int) -> Slot | None:
        return mem[r].get(loc(r, int(Buffer.OUTPUT), j))

    every = range(n)
    for r in range(n):
        for j in range(cout):
            if coll is Collective.ALLREDUCE:
                want = Slot((q, j) for q in every)
            elif coll is Collective.ALLGATHER:
                want = Slot({(j // cin, j % cin)})
            elif coll is Collective.REDUCESCATTER:
                want = Slot((q, r * cout + j) for q in every)
            elif coll is Collective.ALLTOALL:
                c = cout // n
                want = Slot({(j // c, r * c + j % c)})
            elif coll is Collective.BROADCAST:
                want = Slot({(m.root, j)})
            elif coll is Collective.REDUCE:
                if r != m.root:
                    continue
                want = Slot((q, j) for q in every)
            else:
                return problems
            if out(r, j) != want:
                problems.append(
                    f"rank {r} output chunk {j}: has {sorted(out(r, j) or [])[:4]}, wants {sorted(want)[:4]}"
                )
    return problems
