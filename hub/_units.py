"""The one size grammar every component reads (``size=1MiB``, ``2.2MB``, ``1M``, ``1e6``, ``4096``).

Producers, consumers and the pipeline plot all call :func:`parse_size`, so one ``size`` value
in a pipeline means the same number of bytes to every consumer (``docs/pipeline.md`` states the
grammar). Kept free of heavy imports: ``collhub --help`` may load it.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import UsageError

__all__ = ["SIZE_GRAMMAR", "parse_size"]

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


def parse_size(value: int | float | str) -> int:
    """Bytes from an int, a whole float, or a size string (see :data:`SIZE_GRAMMAR`).

    Raises :class:`~hub.errors.UsageError` for anything else: a negative size, a unit outside the
    table, or a value that is not a whole number of bytes (``1.5B``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UsageError(f"size {value!r} is not a byte count", hint=f"give {SIZE_GRAMMAR}")
    if isinstance(value, int):
        if value < 0:
            raise UsageError(f"size must be >= 0 bytes, got {value}")
        return value
    if isinstance(value, float):
        if not value.is_integer() or value < 0:
            raise UsageError(f"size {value!r} is not a whole number of bytes")
        return int(value)
    m = _SIZE.match(value)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise UsageError(f"cannot read size {value!r}", hint=f"give {SIZE_GRAMMAR}")
    # Fraction, not float: 2.2 * 10^6 must be exactly 2200000.
    number = Fraction(m.group(1)) * _UNITS[unit]
    if number.denominator != 1:
        raise UsageError(f"size {value!r} is not a whole number of bytes")
    return int(number)
