"""Verification of collective algorithms at three cumulative levels.

* ``structure``: ids, dependencies (valid, acyclic), peers, chunk counts, buffer bounds, and
  FIFO send/recv matching per (src, dst, tag) with equal chunk counts and sizes.
* ``progress``: no deadlock under ASTRA-sim's execution semantics (eager SENDs, FIFO RECVs).
* ``semantics``: no races (conflicting chunk accesses that happens-before leaves unordered, so
  the result would depend on the schedule), and a symbolic execution of chunk contents meets the
  collective's postcondition.

The buffer layout the levels share (in-place aliasing, the remap transform's communicator order)
is public too, for consumers that execute an algorithm: :func:`layout_of`, :func:`comm_order`.

A report says which requested level could not be checked (``not_checked``, e.g. the semantics
of a CUSTOM collective).

See ``docs/verify.md``.
"""

from __future__ import annotations

from ..errors import Problem
from ._api import check, verify
from ._layout import Layout, comm_order, comm_rank_of, layout_of
from ._origin import SOURCE_LINE
from ._report import LEVELS, VerificationReport

__all__ = [
    "LEVELS",
    "SOURCE_LINE",
    "Layout",
    "Problem",
    "VerificationReport",
    "check",
    "comm_order",
    "comm_rank_of",
    "layout_of",
    "verify",
]
