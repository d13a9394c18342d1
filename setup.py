"""Build-time only: the compiled extensions of `hub._native` (metadata lives in pyproject.toml).

setuptools reads `[project]` from pyproject.toml and adds `ext_modules` from here, so
`pip install -e .` / `make install-dev` / a fresh clone's `make test` compile them with the
system C compiler. The extensions use only the CPython C API and the buffer protocol (no numpy
headers), so the build needs nothing beyond setuptools.
"""

from setuptools import Extension, setup

#: One flag set for every extension, the plugins' C included (plugins/tacos/setup.py repeats it:
#: a plugin builds without the core's source tree; tests/native/test_build.py keeps the copies equal
#: and compiles every source with -Werror). -Werror stays off here so that a newer compiler's new
#: warning never breaks a user's install.
CFLAGS: list[str] = ["-O2", "-std=c99", "-Wall", "-Wextra"]

# One entry per extension module; append new ones here (e.g. the simulator's `hub._native._sim`).
EXTENSIONS: list[Extension] = [
    # the Chakra ET codec's per-node work (hub/chakra/_encode.py, hub/chakra/_ranks.py)
    Extension(
        "hub._native._codec",
        [
            "hub/_native/_codec.c",
            "hub/_native/_codec_write.c",
            "hub/_native/_codec_frame.c",
            "hub/_native/_codec_read.c",
            "hub/_native/_codec_workload.c",
            "hub/_native/_codec_workload_scan.c",
            "hub/_native/_codec_workload_write.c",
        ],
        depends=["hub/_native/_common.h", "hub/_native/_codec.h"],
        extra_compile_args=CFLAGS,
    ),
    # the event loop of hub.simulate (hub/sim/_engine/loop.py)
    Extension(
        "hub._native._sim",
        ["hub/_native/_sim.c", "hub/_native/_sim_prep.c"],
        depends=["hub/_native/_common.h", "hub/_native/_simbuf.h", "hub/_native/_simqueue.h"],
        extra_compile_args=CFLAGS,
    ),
    # the verifier's per-node loops: adjacency, levels, chain cover, the data walk (hub/verify/)
    Extension(
        "hub._native._verify",
        ["hub/_native/_verify.c"],
        depends=["hub/_native/_common.h"],
        extra_compile_args=CFLAGS,
    ),
]

setup(ext_modules=EXTENSIONS)
