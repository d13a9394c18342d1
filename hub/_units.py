"""The one size grammar every component reads (``size=1MiB``, ``2.2MB``, ``1M``, ``1e6``, ``4096``).

Producers, consumers and the pipeline plot all call :func:`parse_size`, so one ``size`` value
in a pipeline means the same number of bytes to every consumer (``docs/pipeline.md`` states the
grammar). Kept free of heavy imports: ``collhub --help`` may load it.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import UsageError

__all__ = ["MAX_BYTES", "SIZE_GRAMMAR", "parse_size", "size_range_text"]

#: The largest size (of a collective, a message, a ``comm_size``) collhub accepts: 1 TiB. No
#: accelerator holds a buffer near it (the largest HBM is under 2^39 bytes), so a larger value is
#: impossible input, refused where it enters instead of simulated into hours or overflowing int64
#: products (bytes x ranks x steps) further on.
MAX_BYTES = 1 << 40
# A written size longer than this is not a size (and Fraction of a 5000-digit string would raise)
_MAX_TEXT = 64

# Case-insensitive. Decimal (SI) prefixes with B, binary (IEC) with iB, and a bare letter is
# binary as in nccl-tests' `-b 1M` and ASTRA-sim's microbenchmark names (`..._1MB` = 2^20 there,
# but a *written* "MB" here is 10^6, as in nccl-tests' GB/s and every SI reader expects).
_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "k": 2**10,
    "m": 2**20,
    "g": 2**30,
    "t": 2**40,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
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
