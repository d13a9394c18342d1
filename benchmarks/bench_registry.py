"""Load test of the registry server: N concurrent clients on loopback, bounded in count and time.

    python benchmarks/bench_registry.py [--clients 200] [--requests 10]

Starts `collhub registry serve` as a real subprocess on a free loopback port over a site built
from a generated plugin wheel, then runs the clients (one keep-alive connection each).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]


def _build_site(tmp: Path) -> Path:
    sample = REPO / "tests" / "registry" / "sample_plugin"
    wheels = tmp / "wheels"
    wheels.mkdir()
    import shutil

    shutil.copytree(sample, tmp / "sample")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(tmp / "sample"),
        ],
        check=True,
        capture_output=True,
    )
    site = tmp / "site"
    subprocess.run(
        [sys.executable, "-m", "hub.cli", "registry", "build", str(wheels), "--out", str(site)],
        check=True,
        capture_output=True,
    )
    return site


async def _client(url: str, n: int, latencies: list[float], errors: list[str]) -> None:
    """One client = one keep-alive connection issuing ``n`` requests in turn.

    A deliberately thin HTTP/1.1 client (asyncio streams): with 200 httpx clients on two cores
    the load generator itself, not the server, was the bottleneck being measured.
    """
    paths = ["/v1/index.json", "/v1/plugins/collhub-sample.json", "/", "/v1/components.json"]
    parts = urlsplit(url)
    try:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    except OSError as exc:
        errors.append(type(exc).__name__)
        return
    try:
        for i in range(n):
            t0 = time.perf_counter()
            writer.write(f"GET {paths[i % len(paths)]} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(length)
            if status != 200:
                errors.append(f"HTTP {status}")
            latencies.append(time.perf_counter() - t0)
    except (OSError, asyncio.IncompleteReadError, ValueError, AttributeError) as exc:
        errors.append(type(exc).__name__)
    finally:
        writer.close()


async def _load(url: str, clients: int, requests: int) -> tuple[list[float], list[str], float]:
    latencies: list[float] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    await asyncio.wait_for(
        asyncio.gather(*(_client(url, requests, latencies, errors) for _ in range(clients))), timeout=120
    )
    return latencies, errors, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--requests", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = _build_site(Path(tmp))
        proc = subprocess.Popen(
            [sys.executable, "-m", "hub.cli", "registry", "serve", str(site), "--port", "0"],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = proc.stderr.readline() if proc.stderr else ""
            match = re.search(r"(http://\S+)", line)
            if not match:
                raise SystemExit(f"server did not start: {line}")
            lat, errors, wall = asyncio.run(_load(match.group(1), args.clients, args.requests))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    lat_ms = sorted(x * 1000 for x in lat)
    p = lambda q: lat_ms[min(len(lat_ms) - 1, int(q * len(lat_ms)))]  # noqa: E731
    print("| clients | requests | errors | wall s | req/s | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.clients} | {len(lat)} | {len(errors)} | {wall:.2f} | {len(lat) / wall:.0f} | {p(0.5):.1f} | "
        f"{p(0.99):.1f} | {lat_ms[-1]:.1f} |"
    )
    if errors:
        print("errors:", statistics.multimode(errors))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
