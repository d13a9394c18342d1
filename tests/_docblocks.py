"""Reading the code blocks of the README and the docs, for the tests that run them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

DOCS: list[Path] = [
    REPO / "README.md",
    *sorted((REPO / "docs").rglob("*.md")),
    *sorted((REPO / "plugins").glob("*/README.md")),
    REPO / "registry" / "README.md",
]
# A fenced block: its language tag (may be empty) and its body.
_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block of one document: `index` counts blocks of the same language; `output` is
    the body of an ```output block that follows it with nothing but blank lines between (what
    the document says the block prints)."""

    doc: str
    lang: str
    index: int
    code: str
    line: int  # 1-based line of the opening fence
    output: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}#{self.lang}{self.index}"


def blocks(lang: str) -> list[Block]:
    """Every fenced block tagged `lang` in DOCS, numbered per document."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        rel = doc.relative_to(REPO).as_posix()
        count = 0
        matches = list(_FENCE.finditer(text))
        for i, match in enumerate(matches):
            if match.group(1) != lang:
                continue
            line = text.count("\n", 0, match.start()) + 1
            nxt = matches[i + 1] if i + 1 < len(matches) else None
            output = None
            if nxt is not None and nxt.group(1) == "output" and not text[match.end() : nxt.start()].strip():
                output = nxt.group(2)
            found.append(Block(rel, lang, count, match.group(2), line, output))
            count += 1
    return found


def strip_fences(text: str) -> str:
    """The document with its fenced blocks blanked (line numbers kept), for link checks."""
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
