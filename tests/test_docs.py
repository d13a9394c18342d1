"""The Python examples in the README and the docs run as written.

Blocks that show a file of a plugin package or an API outline (not a script) are listed in
SKIP with the reason; everything else is executed in a fresh directory.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_DATA

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "plugins").glob("*/README.md"))]
SKIP = {
    ("docs/plugins.md", 0): "a module of an example plugin package, not a script",
    ("docs/plugins.md", 1): "a module of an example plugin package, not a script",
    ("docs/plugins.md", 2): "tests of the example plugin package (run by `collhub plugins new`'s own test)",
    ("docs/pipeline.md", 0): "an outline of the library API over a user's own pipeline file",
    ("docs/algorithms.md", 0): "run by tests/algorithms/test_plugin_and_docs.py",
}
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for doc in DOCS:
        rel = doc.relative_to(REPO).as_posix()
        for i, match in enumerate(_BLOCK.finditer(doc.read_text(encoding="utf-8"))):
            found.append((rel, i, match.group(1)))
    return found


BLOCKS = _blocks()


def test_docs_have_examples() -> None:
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize(("doc", "index", "code"), BLOCKS, ids=[f"{d}#{i}" for d, i, _ in BLOCKS])
def test_example_runs(doc: str, index: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = SKIP.get((doc, index))
    if reason:
        pytest.skip(reason)
    if "../shared/" in code:
        if not SHARED_DATA.is_dir():
            pytest.skip("shared data not available")
        code = code.replace("../shared/", f"{SHARED_DATA.parent}/")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{doc}[{index}]", "exec"), {"__name__": "__docs__"})
