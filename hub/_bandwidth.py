"""nccl-tests' bandwidth figures: ``algbw = S / t`` and ``busbw = algbw x factor(collective, n)``.

The one definition that ``hub.simulate``, the astrasim plugin and the replay plugin report
(``conventions.md`` §1). S is nccl-tests' collective size (the whole array), t the time, and the
bus-bandwidth factor is the one each nccl-tests benchmark applies in its ``*GetBw`` function
(nccl-tests a0b82b2, v2.19.6, ``src/<collective>.cu``; summarised in ``doc/PERFORMANCE.md``):

==============================================  ==============
collective                                      factor
==============================================  ==============
allreduce                                       2 (n - 1) / n
allgather, reducescatter, alltoall              (n - 1) / n
gather, scatter (``src/gather.cu``, ``scatter.cu``)  (n - 1) / n
broadcast, reduce                               1
==============================================  ==============

A custom collective has no factor (None). Bandwidths are decimal GB/s (10^9 B/s), as nccl-tests
prints them. Kept free of imports: a collective is read by its spelling (``Collective`` is a
``str``), so every layer and every plugin can use it.
"""

from __future__ import annotations

__all__ = ["algbw_GBps", "busbw_factor"]

_FACTORS = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def busbw_factor(collective: str | None, n: int) -> float | None:
    """nccl-tests' bus-bandwidth factor for ``collective`` (any spelling: ``all_reduce``,
    ``AllReduce``, a :class:`hub.chakra.Collective`) on ``n`` ranks; None for a custom or unknown
    collective, or no ranks."""
    if collective is None or n < 1:
        return None
    rule = _FACTORS.get(str(collective).strip().lower().replace("_", "").replace("-", ""))
    return None if rule is None else rule(n)


def algbw_GBps(size: float, *, ns: float | None = None, seconds: float | None = None) -> float:
    """``S / t`` in decimal GB/s for ``size`` bytes moved in ``ns`` nanoseconds (bytes per ns) or in
    ``seconds`` (bytes per s / 1e9), whichever unit the caller timed in."""
    if (ns is None) == (seconds is None):
        raise TypeError("algbw_GBps takes exactly one of ns= and seconds=")
    return size / ns if ns is not None else size / seconds / 1e9  # type: ignore[operator]
