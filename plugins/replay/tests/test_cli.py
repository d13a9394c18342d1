"""The consumer through the real CLI, joining a torchrun-style launch: two `collhub consume`
processes with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set form one group. Plus discovery:
the manifest makes `collhub search nccl` find the plugin, without importing torch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from collhub_replay._launch import free_port
from hub.algorithms import make
from hub.chakra import write_algorithm

from .replay_helpers import REPO


def _collhub(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: int = 120
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hub.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def test_consume_joins_a_torchrun_style_launch(tmp_path: Path) -> None:
    write_algorithm(make("ring", "allreduce", 2), str(tmp_path / "ring"))
    port = str(free_port())
    procs = []
    for r in range(2):
        env = {
            "RANK": str(r),
            "WORLD_SIZE": "2",
            "LOCAL_RANK": str(r),
            "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
        }
        (tmp_path / f"w{r}").mkdir()
        procs.append(
            _collhub(
                "consume",
                "replay.run",
                str(tmp_path / "ring"),
                "--set",
                "size=[4KiB,12KiB]",
                "--set",
                "iters=2",
                "--set",
                "backend=gloo",
                "--workdir",
                str(tmp_path / f"w{r}"),
                "--format",
                "json",
                env=env,
            )
        )
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            outs.append(json.loads(out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for res in outs:
        m = res["metrics"]
        assert res["component"] == "replay.run" and m["backend"] == "gloo" and m["ranks"] == 2
        assert m["wrong"] == 0 and m["native_wrong"] == 0 and m["wrong_total"] == 0
        assert m["size_bytes"] == 12288 and m["busbw_GBps"] > 0 and m["native_busbw_GBps"] > 0
        assert [row["size"] for row in res["details"]["rows"]] == [4096, 12288]
    table = (tmp_path / "w0" / outs[0]["artifacts"]["table"]).read_text()
    assert re.search(r"^\s+12288\s+3072\s+float\s+sum\s+-1\s.*replay$", table, re.M), table


def test_bad_size_is_one_line(tmp_path: Path) -> None:
    write_algorithm(make("ring", "allgather", 2), str(tmp_path / "ag"))
    p = _collhub("consume", "replay.run", str(tmp_path / "ag"), "--set", "size=4", "--set", "backend=gloo")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2, err
    assert (
        err.startswith("error: size 4 B is too small for allgather of float32 over 2 ranks") and "Traceback" not in err
    )


def test_search_nccl_finds_the_plugin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "hub.cli", "registry", "build", str(REPO / "plugins" / "replay"), "--out", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0 and "wheel" in built.stderr.lower() and "build" in built.stderr.lower():
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    server = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "registry", "serve", str(site), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stderr.readline() if server.stderr else ""
        url = re.search(r"(http://\S+)", line).group(1)  # type: ignore[union-attr]
        env = {"COLLHUB_REGISTRY_URL": url, "COLLHUB_CACHE_DIR": str(tmp_path / "cache")}
        for word in ("nccl", "gloo", "replay"):
            found = subprocess.run(
                [sys.executable, "-m", "hub.cli", "search", word, "--format", "json"],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, **env},
            )
            assert found.returncode == 0, found.stderr
            assert "collhub-replay" in [p["name"] for p in json.loads(found.stdout)["results"]], word
    finally:
        server.terminate()
        server.wait(timeout=10)
