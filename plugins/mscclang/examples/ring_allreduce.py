"""Ring all-reduce (in-place): reduce-scatter then all-gather around one ring.

Usage: python ring_allreduce.py [ranks=8] [channels=1] [instances=1]
(or ``collhub produce mscclang.program --set path=ring_allreduce.py --set args='["8"]'``).
Chunk r is reduced along r, r+1, ..., r+n-1 and then broadcast along the same ring; with
several channels the chunks alternate between channels.
"""

import sys

from collhub_mscclang.lang import XML, AllReduce, Buffer, MSCCLProgram, chunk


def ring_allreduce(n: int, channels: int = 1, instances: int = 1) -> None:
    with MSCCLProgram(f"ring_allreduce_n{n}", AllReduce(n, n, inplace=True), instances=instances, protocol="Simple"):
        for r in range(n):
            ch = r % channels
            c = chunk(r, Buffer.input, r)
            for step in range(1, n):  # reduce-scatter: accumulate chunk r around the ring
                c = chunk((r + step) % n, Buffer.input, r).reduce(c, ch=ch)
            for step in range(n - 1):  # all-gather: forward the reduced chunk
                c = c.copy((r + step) % n, Buffer.input, r, ch=ch)


if __name__ == "__main__":
    argv = [int(a) for a in sys.argv[1:]]
    ring_allreduce(*(argv or [8]))
    XML()
