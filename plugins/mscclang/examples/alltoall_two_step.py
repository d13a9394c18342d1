"""Two-step all-to-all on nodes x gpus: gather node-bound chunks locally, then one aggregated
transfer per (node pair, local gpu index).

Usage: python alltoall_two_step.py [nodes=2] [gpus_per_node=4]
Chunk (src -> dst) with dst = (n2, g2) first moves to gpu (n1, g2) of the source node, into
scratch buffer "gather" at n2*G + g1; gpu (n1, g2) then sends the G chunks bound for node n2 in a
single transfer. Chunks that stay in the node go directly.
"""

import sys

from collhub_mscclang.lang import XML, AllToAll, Buffer, MSCCLProgram, chunk


def alltoall_two_step(nodes: int = 2, gpus: int = 4) -> None:
    N, G = nodes, gpus
    n = N * G
    with MSCCLProgram(f"alltoall_two_step_{N}x{G}", AllToAll(n, 1, inplace=False)):
        for n1 in range(N):
            for g1 in range(G):
                src = n1 * G + g1
                for n2 in range(N):
                    for g2 in range(G):
                        dst = n2 * G + g2
                        c = chunk(src, Buffer.input, dst)
                        if n1 == n2:  # same node: directly to the output
                            c.copy(dst, Buffer.output, src, ch=0)
                        else:  # gather on the local gpu that talks to (n2, g2)
                            c.copy(n1 * G + g2, "gather", n2 * G + g1, ch=0)
        for n1 in range(N):
            for g2 in range(G):
                for n2 in range(N):
                    if n2 != n1:
                        c = chunk(n1 * G + g2, "gather", n2 * G, size=G)
                        c.copy(n2 * G + g2, Buffer.output, n1 * G, ch=1)


if __name__ == "__main__":
    argv = [int(a) for a in sys.argv[1:]]
    alltoall_two_step(*(argv or [2, 4]))
    XML()
