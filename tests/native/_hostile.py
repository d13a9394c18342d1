"""A sweep of hostile arguments over every function of a compiled extension, in a child process.

Each function gets its stub's argument count (tests/native/test_stubs.py holds the stubs to the
C), first with every argument the same hostile value, then with a plausible baseline (small
zeroed buffers, zero integers) in which one argument at a time is hostile. Every call must return
or raise an ``Exception``: a crash (a signal) or a ``SystemError`` (an exception set without
failing, or failing without one) fails the sweep. The child process is what makes a crash a test
failure rather than the end of the test run.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

_SWEEP = r"""
import importlib, sys
import numpy as np

module = importlib.import_module(sys.argv[1])
arity = eval(sys.argv[2])  # {name: (required, optional)}, written by the parent
hostile = [None, "x", b"", 2**70, -2**70, -1, 2**31, 1.5, (), (None,), [], {}, object(),
           bytearray(3), np.zeros(0, np.int64), np.zeros(3, np.int8), np.zeros((2, 2), np.int32),
           np.zeros(4, np.int64)[::2], np.zeros(2, np.float64), memoryview(b"\0" * 8)]
calls = 0
for name, (required, optional) in sorted(arity.items()):
    func = getattr(module, name)
    for count in range(required, required + optional + 1):
        plans = [[h] * count for h in hostile]
        for dtype in (np.int8, np.int32, np.int64):
            base = [np.zeros(8, dtype) for _ in range(count)]
            plans.append(list(base))
            for i in range(count):
                for h in hostile + [0, 1, 2**62]:
                    plan = list(base)
                    plan[i] = h
                    plans.append(plan)
        for plan in plans:
            calls += 1
            try:
                func(*plan)
            except SystemError as exc:
                raise SystemExit(f"{name}{tuple(type(a).__name__ for a in plan)}: SystemError {exc}")
            except Exception:
                pass
print("calls", calls)
"""


def stub_arity(stub: Path) -> dict[str, tuple[int, int]]:
    """(required, optional) argument counts of each function the stub declares."""
    out = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            total = len(node.args.posonlyargs) + len(node.args.args)
            out[node.name] = (total - len(node.args.defaults), len(node.args.defaults))
    return out


def sweep(module: str, stub: Path, skip: tuple[str, ...] = ()) -> str:
    """Run the sweep over ``module``'s functions (less ``skip``) in a child; its output, or a failure."""
    arity = {k: v for k, v in stub_arity(stub).items() if k not in skip}
    done = subprocess.run(
        [sys.executable, "-c", _SWEEP, module, repr(arity)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{module}: exit {done.returncode} (a negative one is a signal)\n{done.stderr[-2000:]}"
    return done.stdout
