"""A small read-only HTTP/1.1 server for a registry site (any static file host works too).

It serves GET/HEAD only, with strong ETags and ``If-None-Match`` (304), correct content types,
keep-alive, and refuses paths that try to leave the site (``..``, encoded separators, NUL, odd
characters). It runs on one asyncio event loop: a thread per connection (``http.server``) made
hundreds of concurrent clients fight over the GIL and stretched the latency tail to seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import socket
import sys
import threading
from http import HTTPStatus
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["RegistryServer", "make_server"]

_CONTENT_TYPES = {
    ".json": "application/json; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".whl": "application/zip",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_MAX_HEADER_BYTES = 16 * 1024
_IDLE_TIMEOUT = 30.0


class RegistryServer:
    """Serves ``root`` read-only. Files are cached in memory keyed by (mtime, size).

    The listening socket is bound in the constructor (port 0 picks a free one, see ``url``);
    :meth:`serve_forever` runs the event loop until :meth:`shutdown` is called from another thread.
    """

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> None:
        self.root = Path(root).resolve()
        self.verbose = verbose
        self._cache: dict[Path, tuple[tuple[float, int], bytes, str]] = {}
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self._sock.listen(1024)
        self._sock.setblocking(False)
        self.server_address = self._sock.getsockname()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._done = threading.Event()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}/" if ":" in str(host) else f"http://{host}:{port}/"

    # -- lifecycle -------------------------------------------------------------------------
    def serve_forever(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self._done.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self._sock, limit=_MAX_HEADER_BYTES)
        self._started.set()
        async with server:
            await self._stop.wait()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (call from another thread) and wait for it."""
        self._started.wait(timeout=5)
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._done.wait(timeout=10)

    def server_close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    # -- files -----------------------------------------------------------------------------
    def load(self, path: Path) -> tuple[bytes, str]:
        stat = path.stat()
        key = (stat.st_mtime, stat.st_size)
        hit = self._cache.get(path)
        if hit and hit[0] == key:
            return hit[1], hit[2]
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        self._cache[path] = (key, body, etag)
        return body, etag

    def _resolve(self, target: str) -> Path | None:
        raw = urlsplit(target).path
        lowered = raw.lower()
        if "\\" in raw or "\x00" in raw or "%2f" in lowered or "%5c" in lowered or "%00" in lowered:
            return None
        segments = [s for s in unquote(raw).split("/") if s]
        if any(s in (".", "..") or not _SAFE_SEGMENT.match(s) for s in segments):
            return None
        path = self.root.joinpath(*segments) if segments else self.root
        if path.is_dir():
            path = path / "index.html"
        try:
            resolved = path.resolve(strict=True)
        except OSError:
            return path  # safe segments only, so a missing file is a plain 404
        if self.root not in resolved.parents:
            return None  # a symlink pointing out of the site
        return resolved

    # -- HTTP ------------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _IDLE_TIMEOUT)
                except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    self._respond(writer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, b"headers too large\n",
                                  close=True)
                    return
                keep_alive = self._handle(head, writer)
                await writer.drain()
                if not keep_alive:
                    return
        except ConnectionError:
            return
        finally:
            writer.close()

    def _handle(self, head: bytes, writer: asyncio.StreamWriter) -> bool:
        try:
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ")
        except ValueError:
            self._respond(writer, HTTPStatus.BAD_REQUEST, b"bad request\n", close=True)
            return False
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
        if self.verbose:
            print(f"{method} {target}", file=sys.stderr)
        if method not in ("GET", "HEAD"):
            self._respond(writer, HTTPStatus.METHOD_NOT_ALLOWED, b"", close=close, extra={"Allow": "GET, HEAD"})
            return not close
        if int(headers.get("content-length", "0") or 0) > 0:
            self._respond(writer, HTTPStatus.BAD_REQUEST, b"unexpected body\n", close=True)
            return False
        path = self._resolve(target)
        if path is None:
            self._respond(writer, HTTPStatus.BAD_REQUEST, b"bad path\n", close=close, head=method == "HEAD")
        elif not path.is_file():
            self._respond(writer, HTTPStatus.NOT_FOUND, b"not found\n", close=close, head=method == "HEAD")
        else:
            body, etag = self.load(path)
            if etag in [t.strip() for t in headers.get("if-none-match", "").split(",")]:
                self._respond(writer, HTTPStatus.NOT_MODIFIED, b"", close=close, extra={"ETag": etag})
            else:
                self._respond(
                    writer,
                    HTTPStatus.OK,
                    body,
                    close=close,
                    head=method == "HEAD",
                    content_type=_CONTENT_TYPES.get(path.suffix, "application/octet-stream"),
                    extra={"ETag": etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
                )
        return not close

    @staticmethod
    def _respond(
        writer: asyncio.StreamWriter,
        status: HTTPStatus,
        body: bytes,
        *,
        close: bool,
        head: bool = False,
        content_type: str = "text/plain; charset=utf-8",
        extra: dict[str, str] | None = None,
    ) -> None:
        fields = {"Server": "collhub-registry/1", "Content-Length": str(len(body))}
        if body or status == HTTPStatus.OK:
            fields["Content-Type"] = content_type
        fields.update(extra or {})
        if close:
            fields["Connection"] = "close"
        lines = [f"HTTP/1.1 {status.value} {status.phrase}"] + [f"{k}: {v}" for k, v in fields.items()]
        payload = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if not head and status != HTTPStatus.NOT_MODIFIED:
            payload += body
        writer.write(payload)  # one write: headers and body in the same segment


def make_server(root: Path, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> RegistryServer:
    root = Path(root)
    if not (root / "v1" / "index.json").is_file():
        from ..errors import UsageError

        raise UsageError(f"{root}: not a registry site (no v1/index.json)", hint="build one with: collhub registry build")
    try:
        return RegistryServer(root, host, port, verbose=verbose)
    except OSError as exc:
        from ..errors import UsageError

        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", hint="pick another --port") from None
