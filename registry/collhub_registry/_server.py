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

from ._request import BadRequest, Request, parse_head

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
IDLE_TIMEOUT = 30.0  # seconds a keep-alive connection may wait for its next request
HEADER_TIMEOUT = 10.0  # seconds from a request's first byte to the end of its head
WRITE_TIMEOUT = 30.0  # seconds an answer may take to leave (a client that stops reading)
MAX_CONNECTIONS = 1024  # open connections; more are answered 503 and closed
_KNOWN_METHODS = frozenset({"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"})


def _fd_room() -> int:
    """Connections that fit under the process's open-file limit (accept() must never hit EMFILE)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS
    return MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(8, soft - 64)


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
        self._open = 0
        self._fd_room = _fd_room()

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
        if self._open >= min(MAX_CONNECTIONS, self._fd_room):  # bound what idle or slow clients can hold
            self._respond(writer, HTTPStatus.SERVICE_UNAVAILABLE, b"too many connections\n", close=True)
            await self._drain_and_close(writer)
            return
        self._open += 1
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while await self._one_request(reader, writer):
                pass
        except (TimeoutError, ConnectionError):
            pass
        finally:
            self._open -= 1
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read and answer one request; False when the connection should end."""
        # an idle keep-alive connection may wait for its next request; once a request has
        # begun, its whole head must arrive within HEADER_TIMEOUT (slow-drip clients end here)
        # asyncio.timeout, not wait_for: no task per request on this hot path
        try:
            async with asyncio.timeout(IDLE_TIMEOUT):
                first = await reader.readexactly(1)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            return False
        try:
            async with asyncio.timeout(HEADER_TIMEOUT):
                # "\n\r\n" also ends a head that began with the byte just read (parse_head checks CRLF CRLF)
                head = first + await reader.readuntil(b"\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return False
        except TimeoutError:
            self._respond(writer, HTTPStatus.REQUEST_TIMEOUT, b"request head too slow\n", close=True)
            await self._drain_and_close(writer)
            return False
        except asyncio.LimitOverrunError:
            self._respond(writer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, b"headers too large\n", close=True)
            await self._drain_and_close(writer)
            return False
        try:
            keep_alive = self._handle(parse_head(head), writer)
        except BadRequest as exc:
            self._respond(writer, exc.status, exc.reason.encode() + b"\n", close=True)
            keep_alive = False
        except Exception as exc:  # noqa: BLE001 - answer and log; never drop a client without a reply
            print(f"collhub-registry: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
            self._respond(writer, HTTPStatus.INTERNAL_SERVER_ERROR, b"internal error\n", close=True)
            keep_alive = False
        if writer.transport.get_write_buffer_size():  # only a client that is not reading yet
            async with asyncio.timeout(WRITE_TIMEOUT):  # one that never reads ends too
                await writer.drain()
        return keep_alive

    @staticmethod
    async def _drain_and_close(writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(WRITE_TIMEOUT):
                await writer.drain()
        except (ConnectionError, TimeoutError):
            pass
        writer.close()

    def _handle(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        method, target, close = req.method, req.target, req.close
        if self.verbose:
            print(f"{method} {target}", file=sys.stderr)
        if method not in ("GET", "HEAD"):
            status = HTTPStatus.METHOD_NOT_ALLOWED if method in _KNOWN_METHODS else HTTPStatus.NOT_IMPLEMENTED
            self._respond(writer, status, b"", close=close, extra={"Allow": "GET, HEAD"})
            return not close
        head = method == "HEAD"
        try:
            path = self._resolve(target)
            found = path is not None and path.is_file()
        except (OSError, ValueError):  # a name the file system cannot take is simply not there
            path, found = None, False
        if path is None:
            self._respond(writer, HTTPStatus.BAD_REQUEST, b"bad path\n", close=close, head=head)
        elif not found:
            self._respond(writer, HTTPStatus.NOT_FOUND, b"not found\n", close=close, head=head)
        else:
            body, etag = self.load(path)
            if etag in [t.strip() for t in req.headers.get("if-none-match", "").split(",")]:
                self._respond(writer, HTTPStatus.NOT_MODIFIED, b"", close=close, extra={"ETag": etag})
            else:
                self._respond(
                    writer,
                    HTTPStatus.OK,
                    body,
                    close=close,
                    head=head,
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
        from hub.errors import UsageError

        raise UsageError(
            f"{root}: not a registry site (no v1/index.json)", hint="build one with: collhub registry build"
        )
    try:
        return RegistryServer(root, host, port, verbose=verbose)
    except (OSError, ValueError, OverflowError, UnicodeError) as exc:
        from hub.errors import UsageError

        raise UsageError(
            f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}", hint="pick another --port"
        ) from None
