"""The type stubs (``*.pyi``) say what the C accepts: for every function of every extension, the
stub's parameters are the C's ``PyArg_ParseTuple`` format (read from the source), the count of
required and of optional arguments alike; and the built module refuses a wrong count.

mypy reads the stubs (``hub._native.load_sim`` / ``load_verify`` are typed), so a stale stub would
type-check callers against arguments the C does not take.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NATIVE = REPO / "hub" / "_native"
TACOS = REPO / "plugins" / "tacos" / "collhub_tacos"

#: (module, its stub, its C sources)
EXTENSIONS: tuple[tuple[str, Path, tuple[Path, ...]], ...] = (
    ("hub._native._codec", NATIVE / "_codec.pyi", tuple(sorted(NATIVE.glob("_codec*.c")))),
    ("hub._native._sim", NATIVE / "_sim.pyi", (NATIVE / "_sim.c", NATIVE / "_sim_prep.c")),
    ("hub._native._verify", NATIVE / "_verify.pyi", (NATIVE / "_verify.c",)),
    ("collhub_tacos._score", TACOS / "_score.pyi", (TACOS / "_score.c",)),
)

_METHOD = re.compile(r'\{\s*"(\w+)"\s*,\s*(?:\(PyCFunction\)\s*)?(\w+)\s*,\s*(METH_\w+)')
_PARSE = re.compile(r'PyArg_ParseTuple\(\s*args\s*,\s*"([^"]*)"')


def format_arity(fmt: str) -> tuple[int, int]:
    """(required, optional) argument counts of a PyArg_ParseTuple format (the C API's grammar:
    one unit per letter, ``!``/``&``/``#``/``*`` modify the unit before, ``(...)`` is one unit,
    ``es``/``et`` are one, ``|`` starts the optional ones, ``:``/``;`` end the units)."""
    counts = [0, 0]
    optional = depth = 0
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c in ":;":
            break
        if c == "|":
            optional = 1
        elif c == "(":
            if depth == 0:
                counts[optional] += 1
            depth += 1
        elif c == ")":
            depth -= 1
        elif c.isalpha() and depth == 0:
            counts[optional] += 1
            if c == "e" and fmt[i + 1 : i + 2] in ("s", "t"):
                i += 1
        i += 1
    return counts[0], counts[1]


def c_functions(sources: tuple[Path, ...]) -> dict[str, tuple[str, tuple[int, int]]]:
    """Each Python-visible name of the method table: its calling convention and its arity."""
    text = "\n".join(p.read_text() for p in sources)
    out: dict[str, tuple[str, tuple[int, int]]] = {}
    for name, cfunc, flags in _METHOD.findall(text):
        body = re.search(rf"PyObject\s*\*\s*{cfunc}\s*\(PyObject\s*\*\s*\w+,\s*PyObject\s*\*\s*args\)\s*\{{", text)
        assert body is not None, f"{name}: the C function {cfunc} is not found"
        fmt = _PARSE.search(text, body.end())
        assert fmt is not None, f"{name}: no PyArg_ParseTuple(args, ...) in {cfunc}"
        out[name] = (flags, format_arity(fmt.group(1)))
    return out


def stub_functions(stub: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            assert not (args.vararg or args.kwarg or args.kwonlyargs), node.name
            total = len(args.posonlyargs) + len(args.args)
            out[node.name] = (total - len(args.defaults), len(args.defaults))
    return out


def test_the_format_grammar() -> None:
    assert format_arity("iinpOO|OO") == (6, 2)
    assert format_arity("O!O!") == (2, 0)
    assert format_arity("pLO!OOOOOO|O") == (9, 1)
    assert format_arity("(ii)s#|es:name") == (2, 1)


@pytest.mark.parametrize("module, stub, sources", EXTENSIONS, ids=[e[0] for e in EXTENSIONS])
def test_each_stub_is_what_the_c_parses(module: str, stub: Path, sources: tuple[Path, ...]) -> None:
    c = c_functions(sources)
    declared = stub_functions(stub)
    assert set(declared) == set(c), f"{stub.name} declares {sorted(declared)}, the C defines {sorted(c)}"
    for name, (flags, arity) in c.items():
        assert flags == "METH_VARARGS", f"{name}: {flags} (this test reads METH_VARARGS formats only)"
        assert declared[name] == arity, f"{module}.{name}: stub (required, optional) {declared[name]}, C {arity}"


@pytest.mark.parametrize("module, stub, sources", EXTENSIONS, ids=[e[0] for e in EXTENSIONS])
def test_each_function_refuses_a_wrong_argument_count(module: str, stub: Path, sources: tuple[Path, ...]) -> None:
    mod = importlib.import_module(module)
    for name, (required, optional) in stub_functions(stub).items():
        func = getattr(mod, name)
        for count in {0, required - 1, required + optional + 1} - {-1}:
            if count == required:
                continue
            with pytest.raises(TypeError, match=r"argument|takes"):
                func(*([None] * count))
