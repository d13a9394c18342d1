"""Recursive-doubling all-gather (out-of-place), log2(n) exchange rounds.

Usage: python allgather_recursive_doubling.py [ranks=8]   (ranks: a power of two)
Round k: rank r and r XOR 2^k swap the 2^k chunks gathered so far (one transfer each way).
"""

import sys

from collhub_mscclang.lang import XML, AllGather, Buffer, MSCCLProgram, chunk


def allgather_recursive_doubling(n: int = 8) -> None:
    if n & (n - 1):
        raise ValueError(f"ranks={n} is not a power of two")
    with MSCCLProgram(f"allgather_recdoubling_n{n}", AllGather(n, 1, inplace=False)):
        for r in range(n):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r)
        k = 1
        while k < n:
            for r in range(n):
                base = (r // k) * k
                chunk(r, Buffer.output, base, size=k).copy(r ^ k, Buffer.output, base, ch=0)
            k *= 2


if __name__ == "__main__":
    argv = [int(a) for a in sys.argv[1:]]
    allgather_recursive_doubling(*(argv or [8]))
    XML()
