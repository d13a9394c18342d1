"""The packages of ``hub`` import downward only (docs/architecture.md, "the direction of dependencies").

Every import is counted, at module level or inside a function (a deferred import is still a
dependency), read from the source with :mod:`ast`. A package may import its own layer or any layer
below; one layer up is a defect, as is a cycle between the workload layer and its users.
"""

from __future__ import annotations

import ast
from pathlib import Path

HUB = Path(__file__).resolve().parents[1] / "hub"

#: package -> layer, as docs/architecture.md draws them (higher imports lower)
LAYER = {
    "cli": 6,
    "pipeline": 5,
    "results": 5,
    "plugins": 5,
    "registry": 5,
    "sim": 4,
    "workload": 3.5,
    "algorithms": 3,
    "transforms": 3,
    "verify": 3,
    "drawing": 3,
    "chakra": 2,
    "topology": 2,
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(HUB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The hub modules and packages ``path`` imports (relative imports resolved)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {t for t in out if t.startswith("hub.")}


def _edges() -> set[tuple[str, str, str]]:
    """(importing module, its package, imported package) for every import between packages of LAYER."""
    edges = set()
    for path in HUB.rglob("*.py"):
        module = _module(path)
        src = module.split(".")[1] if module.count(".") else ""
        for target in _imports(path):
            dst = target.split(".")[1]
            if src in LAYER and dst in LAYER and src != dst:
                edges.add((module, src, dst))
    return edges


def test_the_layer_table_names_every_subpackage() -> None:
    packages = {p.parent.name for p in HUB.glob("*/__init__.py")} - {"_native"}
    assert packages == set(LAYER)


def test_no_package_imports_a_higher_layer() -> None:
    upward = sorted(f"{m} -> hub.{dst}" for m, src, dst in _edges() if LAYER[dst] > LAYER[src])
    assert upward == []


def test_the_workload_layer_is_imported_downward_only() -> None:
    # sim and the astrasim plugin build on hub.workload; it never reaches back into sim or plugins
    into = {src for _m, src, dst in _edges() if dst == "workload"}
    out_of = {dst for _m, src, dst in _edges() if src == "workload"}
    assert "sim" in into and not out_of & {"sim", "plugins", "pipeline", "cli"}
    assert out_of <= {"chakra", "algorithms", "transforms", "verify"}
