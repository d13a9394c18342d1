"""Build-time only: the plugin's compiled scoring (metadata lives in pyproject.toml), in the
pattern of the core's setup.py: only the CPython C API and the buffer protocol, so the build
needs setuptools and a C compiler and nothing else."""

from setuptools import Extension, setup

#: the core's flag set (setup.py CFLAGS; tests/native/test_build.py keeps the two equal)
CFLAGS: list[str] = ["-O2", "-std=c99", "-Wall", "-Wextra"]

EXTENSIONS: list[Extension] = [
    # the greedy matcher's scoring (collhub_tacos/_greedy.py, _State._first_min)
    Extension("collhub_tacos._score", ["collhub_tacos/_score.c"], extra_compile_args=CFLAGS),
]

setup(ext_modules=EXTENSIONS)
