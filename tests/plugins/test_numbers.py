"""The number rules every params model passes (hub.plugins._numbers), on real models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hub.plugins._numbers import number_problems


class P(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ranks: int = 4
    ratio: float = 1.0
    flag: bool = False
    size: int | str | None = None
    sizes: list[int | str] = []
    name: str = "x"


def _problems(**raw: object) -> dict[str, str]:
    validated = P.model_validate(raw)
    return {".".join(map(str, p.loc)): p.message for p in number_problems(P, raw, validated)}


def test_fine_values_pass() -> None:
    assert _problems(ranks=8, ratio=2.5, flag=True, size="1MiB", sizes=[1, "2KiB"], name="y") == {}


def test_booleans_are_not_numbers() -> None:
    found = _problems(ranks=True, ratio=False, size=True, sizes=[1, True])
    assert set(found) == {"ranks", "ratio", "size", "sizes.1"}
    assert "boolean true" in found["ranks"] and "boolean false" in found["ratio"]


def test_integers_past_int64_and_infinite_floats() -> None:
    found = _problems(ranks=10**30, ratio=float("inf"))
    assert "out of range" in found["ranks"] and "finite" in found["ratio"]


def test_sizes_go_through_the_size_grammar() -> None:
    found = _problems(size="1e400", sizes=["1MiB", 10**13])
    assert set(found) == {"size", "sizes.1"} and all("out of range" in m for m in found.values())


def test_words_in_size_fields_are_left_to_the_model() -> None:
    assert _problems(size="auto") == {}
