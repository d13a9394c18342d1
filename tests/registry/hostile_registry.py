"""A hostile registry for the tests: a real asyncio server on 127.0.0.1 (random port) whose answers
lie, drip, inflate, redirect or break HTTP on purpose.

Each route is ``path -> behaviour`` where a behaviour is a coroutine taking the connection's
writer. The server runs its own event loop on a daemon thread and :meth:`HostileRegistry.close`
cancels every connection, so a test never leaves a socket or a thread behind.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import threading
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["HostileRegistry", "Behaviour", "answer", "drip", "gzip_bomb", "plugin_doc", "raw", "silent"]

Behaviour = Callable[[asyncio.StreamWriter], Awaitable[None]]


def raw(data: bytes) -> Behaviour:
    """Send ``data`` as is (a whole hand-made response, right or wrong), then close."""

    async def run(w: asyncio.StreamWriter) -> None:
        w.write(data)
        await w.drain()

    return run


def answer(
    body: bytes | str | dict[str, Any] | list[Any],
    status: str = "200 OK",
    headers: dict[str, str] | None = None,
    length: int | None = None,
) -> Behaviour:
    """A well-formed response; ``length`` overrides (lies in) Content-Length."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    data = body.encode() if isinstance(body, str) else body
    fields = {
        "Content-Type": "application/json",
        "Content-Length": str(len(data) if length is None else length),
        "Connection": "close",
        **(headers or {}),
    }
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    return raw(head.encode("latin-1") + data)


def drip(data: bytes, interval: float = 0.25) -> Behaviour:
    """Send ``data`` one byte every ``interval`` seconds (slow headers or a slow body)."""

    async def run(w: asyncio.StreamWriter) -> None:
        for i in range(len(data)):
            w.write(data[i : i + 1])
            await w.drain()
            await asyncio.sleep(interval)

    return run


def silent(seconds: float = 60.0) -> Behaviour:
    """Accept the request and never answer."""

    async def run(w: asyncio.StreamWriter) -> None:
        await asyncio.sleep(seconds)

    return run


def gzip_bomb(gib: int = 4, headers: dict[str, str] | None = None) -> Behaviour:
    """A gzip body of ``gib`` GiB of zeros sent as ~1 KiB per MiB: after a full flush deflate
    emits identical bytes for identical input, so one block is repeated (the trailer never
    comes: a client must give up long before)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    first = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    fields = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Connection": "close", **(headers or {})}
    head = ("HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n").encode()

    async def run(w: asyncio.StreamWriter) -> None:
        w.write(head + first)
        for _ in range(gib * 1024 - 1):
            w.write(block)
            await w.drain()

    return run


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body)


def plugin_doc(
    name: str, file_url: str, wheel: bytes, *, size: int | None = None, sha: str | None = None, **version: Any
) -> dict[str, Any]:
    """A plugin document written from docs/spec/registry.md (not by the code under test)."""
    filename = name.replace("-", "_") + "-1.0.0-py3-none-any.whl"
    entry = {
        "requires_hub": "",
        "api_version": "1.0",
        "manifest": {
            "name": name,
            "plugin": "x",
            "api_version": "1.0",
            "components": [{"kind": "producer", "name": "p"}],
        },
        "files": [
            {
                "filename": filename,
                "url": file_url,
                "hashes": {"sha256": sha or hashlib.sha256(wheel).hexdigest()},
                "size": len(wheel) if size is None else size,
            }
        ],
    }
    entry.update(version)
    return {"meta": {"api-version": "1.0"}, "name": name, "latest": "1.0.0", "versions": {"1.0.0": entry}}


class HostileRegistry:
    """Serve ``routes`` on a random loopback port. Unknown paths get 404."""

    def __init__(self) -> None:
        self.routes: dict[str, Behaviour] = {}
        self._loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("hostile registry did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, limit=1 << 16)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            path = head.split(b" ", 2)[1].decode("latin-1").split("?", 1)[0]
            behaviour = self.routes.get(path) or answer("not found\n", "404 Not Found")
            await behaviour(writer)
        except (
            TimeoutError,
            asyncio.CancelledError,
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            IndexError,
        ):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> HostileRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
