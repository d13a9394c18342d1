from __future__ import annotations

import sys
import types

import pytest

from hub.plugins import lazy_namespace


def test_names_resolve_on_first_use_and_are_cached(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "_heavy.py").write_text("LOADED = True\ndef thing():\n    return 42\n")
    (pkg / "__init__.py").write_text(
        "from hub.plugins import lazy_namespace\n"
        "__all__, __getattr__, __dir__ = lazy_namespace(__name__, {'thing': '._heavy'}, globals())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg  # type: ignore[import-not-found]

    try:
        assert "lazypkg._heavy" not in sys.modules
        assert lazypkg.__all__ == ["thing"] and dir(lazypkg) == ["thing"]
        assert lazypkg.thing() == 42
        assert "lazypkg._heavy" in sys.modules and "thing" in vars(lazypkg)
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            lazypkg.nope  # noqa: B018
    finally:
        for name in [m for m in sys.modules if m.startswith("lazypkg")]:
            del sys.modules[name]


def test_returns_sorted_public_names() -> None:
    ns: dict[str, object] = {}
    public, getattr_, dir_ = lazy_namespace("x", {"b": ".m", "a": ".m"}, ns)
    assert public == ["a", "b"] == dir_()
    assert isinstance(getattr_, types.FunctionType)
