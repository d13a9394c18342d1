"""Cross-references in the README and the docs point at things a clone has.

Checked outside code blocks: relative Markdown links (file, and `#anchor` by GitHub's heading
slugs), backticked repository paths (`docs/x.md`, `tests/y.py`, ...), `NAME.md §N` citations
(the cited file must be in the repository), and, in the README and docs/, no `../shared` path
(the developers' shared data is not part of a clone).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests._docblocks import DOCS, strip_fences
from tests.conftest import REPO

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PATH = re.compile(r"`((?:docs|tests|benchmarks|examples|hub|plugins)/[\w./-]+\.(?:md|py|yaml|yml|xml|json|toml))`")
_CITE = re.compile(r"`?([\w.-]+\.md)`?\s*§\s*\d+")
_SHARED = re.compile(r"\.\./shared\b")
#: Docs whose examples need real inputs that only the developers' shared test data holds; each
#: says so in its text, so a reader with a clone knows to point them at their own files.
SHARED_DATA_DOCS = {"docs/workloads.md": "real PyTorch-converted Chakra traces (no licence to ship them here)"}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    text = strip_fences(path.read_text(encoding="utf-8"))
    return frozenset(_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", text, re.M))


def _problems(doc: Path) -> list[str]:
    rel = doc.relative_to(REPO).as_posix()
    text = strip_fences(doc.read_text(encoding="utf-8"))
    found: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        where = f"{rel}:{lineno}"
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            if not path.exists():
                found.append(f"{where}: link to {target!r}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                found.append(f"{where}: link to {target!r}: no such heading")
        for target in _PATH.findall(line):
            if "*" not in target and not (REPO / target).exists() and not (doc.parent / target).exists():
                found.append(f"{where}: names {target!r}, which the repository does not have")
        for cited in _CITE.findall(line):
            if not any(p.name == cited for p in DOCS) and not (doc.parent / cited).exists():
                found.append(f"{where}: cites {cited!r}, which is not in the repository")
    # plugin READMEs may point their developers at it
    if not rel.startswith("plugins/") and rel not in SHARED_DATA_DOCS:
        raw = doc.read_text(encoding="utf-8")  # code blocks included: they are run by readers
        for lineno, line in enumerate(raw.splitlines(), 1):
            if _SHARED.search(line):
                found.append(f"{rel}:{lineno}: names a ../shared path, which a clone does not have")
    return found


def test_slug_follows_github() -> None:
    assert _slug("1. Declare the entry point") == "1-declare-the-entry-point"
    assert _slug("`plugins info NAME --remote`") == "plugins-info-name---remote"
    assert _slug("Model (time = integer ns, B' = bw·2^30/10^9 B/ns)") == "model-time--integer-ns-b--bw230109-bns"


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(REPO).as_posix() for d in DOCS])
def test_cross_references_resolve(doc: Path) -> None:
    problems = _problems(doc)
    assert not problems, "\n".join(problems)
