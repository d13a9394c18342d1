"""The Python examples in the README and the docs run as written, and print what they say.

Blocks that show a file of a plugin package or an API outline (not a script) are listed in
SKIP with the reason; everything else is executed in a fresh directory. A line
`print(EXPR)  # VALUE` is checked: it must print VALUE (a trailing `...` matches any rest).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests._docblocks import Block, blocks
from tests.conftest import SHARED_DATA

SKIP = {
    "docs/plugins.md#python0": "a module of an example plugin package, not a script",
    "docs/plugins.md#python1": "a module of an example plugin package, not a script",
    "docs/plugins.md#python3": "the kit tests `collhub plugins new` writes (tests/cli/test_cli.py runs them)",
    "docs/pipeline.md#python1": "an outline of the library API over a user's own pipeline file",
    "docs/algorithms.md#python0": "run by tests/algorithms/test_plugin_and_docs.py",
}
BLOCKS = blocks("python")
_STATED = re.compile(r"^(?P<indent>\s*)print\((?P<expr>.*)\)\s*#\s*(?:->\s*)?(?P<want>\S.*?)\s*$", re.M)


def _check_printed(want: str, *values: Any) -> None:
    """print(), then compare with the value the document states."""
    got = " ".join(str(v) for v in values)
    print(got)
    if want.endswith("..."):
        head = want[:-3].split()
        assert got.split()[: len(head)] == head, f"printed {got!r}, the document says {want!r}"
    else:
        assert got.split() == want.split(), f"printed {got!r}, the document says {want!r}"


def _instrument(code: str) -> str:
    return _STATED.sub(lambda m: f"{m['indent']}__doc_print({m['want']!r}, {m['expr']})", code)


def test_docs_have_examples() -> None:
    assert len(BLOCKS) >= 8
    assert sum(bool(_STATED.search(b.code)) for b in BLOCKS) >= 4, "the stated values are no longer checked"


def test_instrument_checks_values() -> None:
    # The checker itself must be able to fail (a wrong stated value is caught).
    with pytest.raises(AssertionError, match="the document says"):
        exec(_instrument("print(1 + 1)   # 3\n"), {"__doc_print": _check_printed})
    exec(_instrument("print(2, 'x', 3)   # 2 x ...\n"), {"__doc_print": _check_printed})


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = SKIP.get(block.id)
    if reason:
        pytest.skip(reason)
    code = block.code
    if "../shared/" in code:
        if not SHARED_DATA.is_dir():
            pytest.skip("shared data not available")
        code = code.replace("../shared/", f"{SHARED_DATA.parent}/")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__", "__doc_print": _check_printed}
    exec(compile(_instrument(code), f"{block.doc}:{block.line}", "exec"), namespace)
