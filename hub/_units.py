"""The one size grammar every component reads (``size=1MiB``, ``2.2MB``, ``1M``, ``1e6``, ``4096``).

Producers, consumers and the pipeline plot all call :func:`parse_size`, so one ``size`` value
in a pipeline means the same number of bytes to every consumer (``docs/pipeline.md`` states the
grammar). Kept free of heavy imports: ``collhub --help`` may load it.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Literal

from .errors import UsageError

__all__ = [
    "MAX_BYTES",
    "SIZE_GRAMMAR",
    "SIZE_NAMES",
    "UNITS",
    "format_size",
    "parse_size",
    "percent_of_bound",
    "size_range_text",
]

#: The largest size (of a collective, a message, a ``comm_size``) collhub accepts: 1 TiB. No
#: accelerator holds a buffer near it (the largest HBM is under 2^39 bytes), so a larger value is
#: impossible input, refused where it enters instead of simulated into hours or overflowing int64
#: products (bytes x ranks x steps) further on.
MAX_BYTES = 1 << 40
# A written size longer than this is not a size (and Fraction of a 5000-digit string would raise)
_MAX_TEXT = 64

#: The one unit table, as sizes are written: binary (IEC) units, then decimal (SI), largest first.
UNITS: tuple[tuple[str, int], ...] = (
    ("TiB", 2**40),
    ("GiB", 2**30),
    ("MiB", 2**20),
    ("KiB", 2**10),
    ("TB", 10**12),
    ("GB", 10**9),
    ("MB", 10**6),
    ("KB", 10**3),
)
_BINARY = tuple((unit, scale) for unit, scale in UNITS if unit.endswith("iB"))
# Read case-insensitively. Decimal (SI) prefixes with B, binary (IEC) with iB, and a bare letter is
# binary as in nccl-tests' `-b 1M` and ASTRA-sim's microbenchmark names (`..._1MB` = 2^20 there,
# but a *written* "MB" here is 10^6, as in nccl-tests' GB/s and every SI reader expects).
_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    **{unit.lower(): scale for unit, scale in UNITS},
    **{unit[0].lower(): scale for unit, scale in _BINARY},
}
#: Variable names whose values are sizes even when written as plain numbers (ranges, plots, reports).
SIZE_NAMES = ("size", "bytes", "size_bytes", "nbytes", "message_size", "msg_size")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?(?:e\+?\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
SIZE_GRAMMAR = (
    "bytes (4096, 1e6) or a number and a unit: KB/MB/GB/TB = 10^3.. (2.2MB), "
    "KiB/MiB/GiB/TiB = 2^10.. (1MiB), K/M/G/T = 2^10.. as in nccl-tests (1M)"
)


def size_range_text() -> str:
    """The allowed range, as errors state it."""
    return f"0..{MAX_BYTES} bytes (1TiB)"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _out_of_range(value: object) -> UsageError:
    return UsageError(
        f"size {_short(value)} is out of range: sizes are {size_range_text()}",
        hint="no accelerator holds a larger buffer; give a smaller size",
    )


def _magnitude(number: str) -> int | None:
    """Decimal digits before the point of ``number`` (``12.5e3``: 5), read from the text alone;
    None for zero (whatever its exponent)."""
    mantissa, _, exponent = number.lower().partition("e")
    whole, _, frac = mantissa.partition(".")
    whole = whole.lstrip("0")
    if whole:
        digits = len(whole)
    elif frac.strip("0"):
        digits = -(len(frac) - len(frac.lstrip("0")))
    else:
        return None
    return digits + (int(exponent.lstrip("+")) if exponent else 0)


def parse_size(value: int | float | str) -> int:
    """Bytes from an int, a whole float, or a size string (see :data:`SIZE_GRAMMAR`), in
    0..:data:`MAX_BYTES`.

    Raises :class:`~hub.errors.UsageError` for anything else: a negative size, a unit outside the
    table, a value that is not a whole number of bytes (``1.5B``), a boolean, or a size past
    :data:`MAX_BYTES` (``1e400``, a 31-digit integer), which is refused before anything is
    computed from it.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"size {_short(value)} is not a byte count", hint=f"give {SIZE_GRAMMAR}")
    if isinstance(value, int):
        if value < 0:
            raise UsageError(f"size must be >= 0 bytes, got {_short(value)}")
        if value > MAX_BYTES:
            raise _out_of_range(value)
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _out_of_range(value)
        if not value.is_integer() or value < 0:
            raise UsageError(f"size {value!r} is not a whole number of bytes")
        if value > MAX_BYTES:
            raise _out_of_range(value)
        return int(value)
    m = _SIZE.match(value) if len(value) <= _MAX_TEXT else None
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise UsageError(f"cannot read size {_short(value)}", hint=f"give {SIZE_GRAMMAR}")
    if (_magnitude(m.group(1)) or 0) > 20:  # before Fraction builds 10^400 (or 10^(10^9)) exactly
        raise _out_of_range(value)
    # Fraction, not float: 2.2 * 10^6 must be exactly 2200000.
    number = Fraction(m.group(1)) * _UNITS[unit] if _magnitude(m.group(1)) is not None else Fraction(0)
    if number.denominator != 1:
        raise UsageError(f"size {value!r} is not a whole number of bytes")
    if number > MAX_BYTES:
        raise _out_of_range(value)
    return int(number)


def format_size(n: float, style: Literal["exact", "label", "reading"] = "exact") -> str:
    """``n`` bytes written in one of the three styles collhub prints (one unit table, :data:`UNITS`):

    * ``"exact"``: the shortest string :func:`parse_size` reads back as exactly ``n`` (``64KiB``,
      ``1MB``, ``1536B``): range values, report tables, export names;
    * ``"label"``: the exact string when there is one, else three significant digits of the
      largest binary unit (``1.5GiB``, ``100B``): plot axes;
    * ``"reading"``: a person's reading, one decimal and a space (``1.0 MiB``, ``512 B``): the
      summaries of ``collhub trace show``.
    """
    if style == "reading":
        x = n
        for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(x) < 1024 or unit == "TiB":
                return f"{x} B" if unit == "B" else f"{x:.1f} {unit}"
            x /= 1024
        return f"{x} B"  # (not reached: TiB ends the loop)
    n = int(n)
    for unit, scale in UNITS:
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    if style == "label":
        for unit, scale in _BINARY:
            if n >= scale:
                return f"{n / scale:.3g}{unit}"
    return f"{n}B"


def percent_of_bound(ratio: Any) -> str:
    """``time_over_bound`` as a compact percentage: ``112%``; below the bound one decimal,
    rounded down, so an impossible time never reads as ``100%``; empty when not a number."""
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not math.isfinite(ratio):
        return ""
    if ratio < 1:
        return f"{math.floor(ratio * 1000) / 10:.1f}%"
    return f"{ratio * 100:.0f}%"
