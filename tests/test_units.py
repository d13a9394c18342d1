"""One size grammar (hub._units.parse_size), and every component that reads a size uses it."""

from __future__ import annotations

import pytest

import hub
from hub._units import parse_size
from hub.errors import UsageError

MIB = 1 << 20


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1M", MIB),
        ("1MiB", MIB),
        ("1mib", MIB),
        ("1 MiB", MIB),
        ("2.2MB", 2_200_000),
        ("1e6", 10**6),
        ("1E3", 1000),
        ("4096", 4096),
        ("4096B", 4096),
        ("1.5K", 1536),
        ("64KB", 64_000),
        ("64KiB", 65536),
        ("2 GiB", 2 << 30),
        ("1T", 1 << 40),
        ("1TB", 10**12),
        (4096, 4096),
        (0, 0),
        (1e6, 10**6),
    ],
)
def test_grammar(text: object, value: int) -> None:
    assert parse_size(text) == value  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["lots", "-5", "1.5B", "1MBB", "", "e6", "1x", "0.1K", 1.5, -1, True, None, [1]])
def test_garbage_is_one_usage_error_with_the_grammar(bad: object) -> None:
    with pytest.raises(UsageError) as info:
        parse_size(bad)  # type: ignore[arg-type]
    err = info.value
    assert repr(bad) in err.message or str(bad) in err.message


def test_the_hint_states_both_prefix_kinds() -> None:
    with pytest.raises(UsageError) as info:
        parse_size("lots")
    assert "10^3" in (info.value.hint or "") and "2^10" in (info.value.hint or "")


def test_every_reader_is_the_core_one() -> None:
    """hub.simulate, the pipeline plot and the plugins accept exactly the same values."""
    from hub.results._plot import parse_bytes
    from hub.sim import SimulateParams, parse_size as sim_parse

    assert hub.parse_size is parse_size and sim_parse is parse_size
    for text in ("1M", "2.2MB", "1e6", "1MiB"):
        SimulateParams(network="ring:8", size=text)
        assert parse_bytes(text) == parse_size(text)
    astrasim = pytest.importorskip("collhub_astrasim")
    for text in ("1M", "2.2MB", "1e6", "1MiB"):
        assert astrasim.parse_size(text) == parse_size(text)
    with pytest.raises(UsageError):
        astrasim.parse_size(0)  # ASTRA-sim needs at least one byte


# --- bounds (issue 26): checked before anything is computed from the value -------------------
@pytest.mark.parametrize(
    "value",
    ["1e400", "1000000000000000000000000000000", 10**30, "1e999999999", "2TiB", "1099511627777", float("inf"),
     float("nan"), 2.0**41, "9" * 70],
)  # fmt: skip
def test_sizes_past_1_tib_are_refused(value: object) -> None:
    from hub.errors import UsageError

    with pytest.raises(UsageError, match="out of range|cannot read size"):
        parse_size(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1TiB", 1 << 40), (1 << 40, 1 << 40), ("0e999999999", 0), ("0.0000000000000000001e25", 10**6)],
)
def test_sizes_up_to_1_tib_are_read_exactly(value: object, expected: int) -> None:
    assert parse_size(value) == expected  # type: ignore[arg-type]


def test_booleans_are_not_sizes() -> None:
    from hub.errors import UsageError

    for value in (True, False):
        with pytest.raises(UsageError, match="not a byte count"):
            parse_size(value)


# The three styles collhub prints sizes in (one function, one unit table). Expected strings are
# what each place printed before the three copies became one (trace show, plot axes, ranges).
@pytest.mark.parametrize(
    ("n", "exact", "label", "reading"),
    [
        (100, "100B", "100B", "100 B"),
        (1000, "1KB", "1KB", "1000 B"),
        (1536, "1536B", "1.5KiB", "1.5 KiB"),
        (1 << 20, "1MiB", "1MiB", "1.0 MiB"),
        (3 * 2**30, "3GiB", "3GiB", "3.0 GiB"),
        (10**9, "1GB", "1GB", "953.7 MiB"),
        (2**40 + 2**39, "1536GiB", "1536GiB", "1.5 TiB"),
        (2**41 + 1, "2199023255553B", "2TiB", "2.0 TiB"),
    ],
)
def test_format_size_styles(n: int, exact: str, label: str, reading: str) -> None:
    from hub._units import format_size

    assert (format_size(n), format_size(n, "label"), format_size(n, "reading")) == (exact, label, reading)


def test_every_exact_size_reads_back_and_the_tables_agree() -> None:
    from hub._units import UNITS, format_size

    for unit, scale in UNITS:
        assert parse_size(f"1{unit}") == scale and parse_size(format_size(scale)) == scale
    # binary units are tried first (10**12 is 976562500KiB), as the ranges always wrote them
    assert [format_size(scale) for unit, scale in UNITS if unit.endswith("iB")] == ["1TiB", "1GiB", "1MiB", "1KiB"]
    for n in (1, 1000, 1023, 1025, 4096, 10**6 + 1, 5 * 10**11):
        assert parse_size(format_size(n)) == n
