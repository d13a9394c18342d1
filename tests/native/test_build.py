"""The compiled extensions are built and importable (``setup.py`` builds them on install)."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from hub._native import EXTENSIONS

REPO = Path(__file__).resolve().parents[2]


def test_setup_builds_every_listed_extension() -> None:
    built = set(re.findall(r'Extension\(\s*"([\w.]+)"', (REPO / "setup.py").read_text()))
    assert built == set(EXTENSIONS)


@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_imports(name: str) -> None:
    module = importlib.import_module(name)
    assert Path(module.__file__ or "").suffix in (".so", ".pyd")


# -- one flag set, no warnings ---------------------------------------------------------------------
_SETUPS = (REPO / "setup.py", REPO / "plugins" / "tacos" / "setup.py")


def _setup_facts(path: Path) -> tuple[list[str], list[tuple[str, list[str], ast.expr | None]]]:
    """The CFLAGS list and each Extension(name, sources, extra_compile_args=...) of a setup.py."""
    tree = ast.parse(path.read_text())
    flags: list[str] = []
    extensions = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "CFLAGS":
            assert node.value is not None
            flags = ast.literal_eval(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Extension":
            args = {k.arg: k.value for k in node.keywords}
            extensions.append(
                (ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1]), args.get("extra_compile_args"))
            )
    return flags, extensions


def test_every_extension_is_built_with_the_one_flag_set() -> None:
    core, plugin = (_setup_facts(p) for p in _SETUPS)
    assert core[0] == plugin[0], "plugins/tacos/setup.py's CFLAGS drifted from setup.py's"
    assert {"-Wall", "-Wextra"} <= set(core[0]) and "-Werror" not in core[0]
    for _flags, extensions in (core, plugin):
        assert extensions
        for name, _sources, args in extensions:
            assert isinstance(args, ast.Name) and args.id == "CFLAGS", name


def _compiler() -> list[str] | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return cc if shutil.which(cc[0]) else None


@pytest.mark.parametrize(
    "setup_py, source",
    [(p, s) for p in _SETUPS for _n, sources, _a in _setup_facts(p)[1] for s in sources],
    ids=lambda v: v if isinstance(v, str) else v.parent.name,
)
def test_every_source_compiles_without_a_warning(setup_py: Path, source: str, tmp_path: Path) -> None:
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler on this machine (the installed extensions were built elsewhere)")
    flags = _setup_facts(setup_py)[0]
    path = setup_py.parent / source
    include = sysconfig.get_paths()["include"]
    done = subprocess.run(
        [*cc, *flags, "-Werror", "-I", include, "-I", str(path.parent), "-c", str(path), "-o", str(tmp_path / "o.o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
