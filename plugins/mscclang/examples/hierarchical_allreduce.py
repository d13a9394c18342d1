"""Hierarchical all-reduce on nodes x gpus: intra-node ring reduce-scatter, inter-node ring
all-reduce of each gpu's share, intra-node ring all-gather.

Usage: python hierarchical_allreduce.py [nodes=2] [gpus_per_node=4]
Rank = node * gpus_per_node + gpu. Each rank holds G*N chunks; after the first phase local gpu g
owns the node's partial sums of chunks [g*N, (g+1)*N), which the N gpus with the same local
index all-reduce across nodes (one chunk per node, around the node ring) before the node-local
all-gather.
"""

import sys

from collhub_mscclang.lang import XML, AllReduce, Buffer, MSCCLProgram, chunk


def hierarchical_allreduce(nodes: int = 2, gpus: int = 4) -> None:
    N, G = nodes, gpus
    n = N * G
    rank = lambda node, g: node * G + g  # noqa: E731
    with MSCCLProgram(f"hier_allreduce_{N}x{G}", AllReduce(n, N * G, inplace=True)):
        # 1. intra-node ring reduce-scatter: group g ends reduced on local gpu g (channel 0)
        for node in range(N):
            for g in range(G):
                start = (g + 1) % G
                c = chunk(rank(node, start), Buffer.input, g * N, size=N)
                for step in range(1, G):
                    nxt = (start + step) % G
                    c = chunk(rank(node, nxt), Buffer.input, g * N, size=N).reduce(c, ch=0)
        # 2. inter-node ring all-reduce among gpus with local index g (channel 1): sub-chunk j
        for g in range(G):
            for j in range(N):
                idx = g * N + j
                start = (j + 1) % N
                c = chunk(rank(start, g), Buffer.input, idx)
                for step in range(1, N):
                    c = chunk(rank((start + step) % N, g), Buffer.input, idx).reduce(c, ch=1)
                for step in range(N - 1):
                    c = c.copy(rank((j + 1 + step) % N, g), Buffer.input, idx, ch=1)
        # 3. intra-node ring all-gather of each group (channel 2)
        for node in range(N):
            for g in range(G):
                c = chunk(rank(node, g), Buffer.input, g * N, size=N)
                for step in range(1, G):
                    c = c.copy(rank(node, (g + step) % G), Buffer.input, g * N, ch=2)


if __name__ == "__main__":
    argv = [int(a) for a in sys.argv[1:]]
    hierarchical_allreduce(*(argv or [2, 4]))
    XML()
