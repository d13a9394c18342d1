"""A small read-only HTTP server for a registry site (any static file host works too).

It serves GET/HEAD only, with strong ETags and ``If-None-Match`` (304), correct content types,
and refuses paths that try to leave the site (``..``, encoded separators, NUL, odd characters).
"""

from __future__ import annotations

import hashlib
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class _Handler(BaseHTTPRequestHandler):
    server: "RegistryServer"
    server_version = "collhub-registry/1"
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    def _resolve(self) -> Path | None:
        raw = urlsplit(self.path).path
        if "\\" in raw or "\x00" in raw or "%2f" in raw.lower() or "%5c" in raw.lower():
            return None
        path = unquote(raw)
        segments = [s for s in path.split("/") if s]
        if any(s in (".", "..") or not _SAFE_SEGMENT.match(s) for s in segments):
            return None
        target = self.server.root.joinpath(*segments) if segments else self.server.root
        if target.is_dir():
            target = target / "index.html"
        try:
            resolved = target.resolve(strict=True)
        except OSError:
            return target  # safe segments only, so a missing file is a plain 404
        if self.server.root not in resolved.parents and resolved != self.server.root:
            return None
        return resolved

    def _send_error(self, status: HTTPStatus, message: str) -> None:
        body = (message + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self, head: bool) -> None:
        target = self._resolve()
        if target is None:
            self._send_error(HTTPStatus.BAD_REQUEST, "bad path")
            return
        if not target.is_file():
            self._send_error(HTTPStatus.NOT_FOUND, "not found")
            return
        body, etag = self.server.load(target)
        if etag in [t.strip() for t in self.headers.get("If-None-Match", "").split(",")]:
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", _CONTENT_TYPES.get(target.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._serve(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(head=True)

    def _refuse(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815


class RegistryServer(ThreadingHTTPServer):
    """Serves ``root`` read-only. Files are cached in memory keyed by (mtime, size)."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, root: Path, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> None:
        self.root = Path(root).resolve()
        self.verbose = verbose
        self._cache: dict[Path, tuple[tuple[float, int], bytes, str]] = {}
        self._lock = threading.Lock()
        super().__init__((host, port), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hangs up mid-response (ConnectionResetError, BrokenPipeError) is normal
        # under load; print nothing unless asked to be verbose.
        if self.verbose:
            super().handle_error(request, client_address)  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def load(self, path: Path) -> tuple[bytes, str]:
        stat = path.stat()
        key = (stat.st_mtime, stat.st_size)
        with self._lock:
            hit = self._cache.get(path)
            if hit and hit[0] == key:
                return hit[1], hit[2]
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        with self._lock:
            self._cache[path] = (key, body, etag)
        return body, etag


def make_server(root: Path, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> RegistryServer:
    root = Path(root)
    if not (root / "v1" / "index.json").is_file():
        from ..errors import UsageError

        raise UsageError(f"{root}: not a registry site (no v1/index.json)", hint="build one with: collhub registry build")
    return RegistryServer(root, host, port, verbose=verbose)
