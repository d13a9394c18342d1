"""``did you mean``: the closest of a set of known words, for error hints (one rule everywhere)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(word: str, options: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The option closest to ``word`` (difflib's ratio, at least ``cutoff``), else None;
    compared without case, so ``AllReduc`` finds ``allreduce``."""
    opts = list(dict.fromkeys(options))
    lowered = {o.lower(): o for o in opts}
    close = difflib.get_close_matches(str(word).lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[close[0]] if close else None
