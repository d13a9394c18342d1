"""Build-time only: the compiled extensions of `hub._native` (metadata lives in pyproject.toml).

setuptools reads `[project]` from pyproject.toml and adds `ext_modules` from here, so
`pip install -e .` / `make install-dev` / a fresh clone's `make test` compile them with the
system C compiler. The extensions use only the CPython C API and the buffer protocol (no numpy
headers), so the build needs nothing beyond setuptools.
"""

from setuptools import Extension, setup

# One entry per extension module; append new ones here (e.g. the simulator's `hub._native._sim`).
EXTENSIONS: list[Extension] = [
]

setup(ext_modules=EXTENSIONS)
