"""The registry server against hostile clients on real loopback sockets: every malformed request
gets an HTTP answer with the right status (never a dropped connection or an exception in the
handler), slow and idle clients are cut off, the connection count is bounded, and the server
keeps serving afterwards."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from collhub_registry import RegistryServer, _server, make_server
from collhub_registry._request import BadRequest, parse_head

INDEX = b'{"meta": {"api-version": "1.0"}, "plugins": []}\n'


@pytest.fixture
def srv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RegistryServer]:
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "index.json").write_bytes(INDEX)
    monkeypatch.setattr(_server, "HEADER_TIMEOUT", 0.5)
    monkeypatch.setattr(_server, "IDLE_TIMEOUT", 0.5)
    server = make_server(tmp_path, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _exchange(server: RegistryServer, data: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``data`` and read until the server closes (or ``wait`` passes)."""
    with socket.create_connection(server.server_address[:2], timeout=wait) as sock:
        sock.sendall(data)
        chunks = []
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _status(reply: bytes) -> int:
    assert reply.startswith(b"HTTP/1.1 "), reply[:200]
    return int(reply[9:12])


def _healthy(server: RegistryServer) -> None:
    reply = _exchange(server, b"GET /v1/index.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert _status(reply) == 200 and reply.endswith(INDEX)


G = b"GET /v1/index.json HTTP/1.1\r\nHost: x\r\n"
BAD_REQUESTS: list[tuple[str, bytes, int]] = [
    ("content-length-words", G + b"Content-Length: abc\r\n\r\n", 400),
    ("content-length-negative", G + b"Content-Length: -1\r\n\r\n", 400),
    ("content-length-huge", G + b"Content-Length: 99999999999999999999999999\r\n\r\n", 400),
    ("content-length-empty", G + b"Content-Length: \r\n\r\n", 400),
    ("content-length-unicode-digits", G + "Content-Length: ٣\r\n\r\n".encode(), 400),
    ("content-length-body", G + b"Content-Length: 5\r\n\r\nhello", 400),
    ("content-length-twice", G + b"Content-Length: 0\r\nContent-Length: 0\r\n\r\n", 400),
    ("transfer-encoding", G + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("path-8000", b"GET /" + b"a" * 8000 + b" HTTP/1.1\r\n\r\n", 414),
    ("path-3000-segments", b"GET " + b"/ab" * 1000 + b" HTTP/1.1\r\n\r\n", 414),
    ("segment-1500", b"GET /" + b"a" * 1500 + b" HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("line-two-parts", b"GET /\r\n\r\n", 400),
    ("line-four-parts", b"GET / HTTP/1.1 extra\r\n\r\n", 400),
    ("line-double-space", b"GET  / HTTP/1.1\r\n\r\n", 400),
    ("line-empty", b"\r\n\r\n", 400),
    ("method-not-token", b"G(T / HTTP/1.1\r\n\r\n", 400),
    ("method-unknown", b"BREW / HTTP/1.1\r\n\r\n", 501),
    ("method-post", b"POST / HTTP/1.1\r\nConnection: close\r\n\r\n", 405),
    ("method-delete", b"DELETE /v1/index.json HTTP/1.1\r\nConnection: close\r\n\r\n", 405),
    ("version-2", b"GET / HTTP/2.0\r\n\r\n", 505),
    ("version-junk", b"GET / FOO/1.1\r\n\r\n", 400),
    ("version-0.9-ish", b"GET / HTTP/0.9\r\n\r\n", 505),
    ("target-relative", b"GET v1/index.json HTTP/1.1\r\n\r\n", 400),
    ("target-star", b"OPTIONS * HTTP/1.1\r\n\r\n", 400),
    ("target-control", b"GET /v1/\x01 HTTP/1.1\r\n\r\n", 400),
    ("target-non-ascii", "GET /v1/é HTTP/1.1\r\n\r\n".encode(), 400),
    ("target-broken-ipv6", b"GET http://[/x HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("header-no-colon", G + b"not a header\r\n\r\n", 400),
    ("header-space-before-colon", G + b"Host : x\r\n\r\n", 400),
    ("header-obs-fold", G + b"X-A: one\r\n two\r\n\r\n", 400),
    ("header-control-value", G + b"X-A: a\x01b\r\n\r\n", 400),
    ("header-bare-lf", G + b"X-A: a\nX-B: b\r\n\r\n", 400),
    ("header-nul", G + b"X-A: a\x00b\r\n\r\n", 400),
    ("header-empty-name", G + b": value\r\n\r\n", 400),
    ("headers-100", G + b"".join(b"X-%d: v\r\n" % i for i in range(100)) + b"\r\n", 431),
    ("header-20k", G + b"X-Big: " + b"b" * 20_000 + b"\r\n\r\n", 431),
    ("traversal-dotdot", b"GET /../../etc/passwd HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("traversal-encoded", b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("traversal-slash-encoded", b"GET /v1%2findex.json HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("traversal-nul-encoded", b"GET /v1/%00 HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("traversal-backslash", b"GET /v1\\..\\..\\x HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("bad-utf8-encoded", b"GET /v1/%ff%fe HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    ("binary-garbage", bytes(range(256)) * 4 + b"\r\n\r\n", 400),
]


@pytest.mark.parametrize("case, data, status", BAD_REQUESTS, ids=[c for c, _, _ in BAD_REQUESTS])
def test_malformed_requests_get_an_answer(srv: RegistryServer, case: str, data: bytes, status: int) -> None:
    start = time.monotonic()
    reply = _exchange(srv, data)
    assert _status(reply) == status, reply[:300]
    assert time.monotonic() - start < 3
    _healthy(srv)


def test_the_cli_server_answers_a_bad_length_and_a_long_path(tmp_path: Path) -> None:
    """The two reports of the issue, against `collhub registry serve` itself (a subprocess)."""
    import re
    import subprocess
    import sys

    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "index.json").write_bytes(INDEX)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hub.cli", "registry", "serve", str(tmp_path), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        match = re.search(r"http://([\d.]+):(\d+)/", line)
        assert match, line
        addr = (match.group(1), int(match.group(2)))

        class _Addr:
            server_address = addr

        for data, status in (
            (G + b"Content-Length: abc\r\n\r\n", 400),
            (b"GET /" + b"a" * 8000 + b" HTTP/1.1\r\n\r\n", 414),
        ):
            assert _status(_exchange(_Addr, data)) == status  # type: ignore[arg-type]
        _healthy(_Addr)  # type: ignore[arg-type]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_absolute_form_and_pipelining_still_work(srv: RegistryServer) -> None:
    reply = _exchange(srv, b"GET http://x/v1/index.json HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert _status(reply) == 200
    two = _exchange(
        srv, b"HEAD /v1/index.json HTTP/1.1\r\n\r\nGET /v1/index.json HTTP/1.1\r\nConnection: close\r\n\r\n"
    )
    assert two.count(b"HTTP/1.1 200 OK") == 2 and two.endswith(INDEX)


def test_slow_headers_get_408_and_idle_connections_close(srv: RegistryServer) -> None:
    with socket.create_connection(srv.server_address[:2], timeout=5) as sock:
        sock.sendall(b"GET /v1/index.json HTTP/1.1\r\n")
        start = time.monotonic()
        reply = b""
        for _ in range(20):  # a header byte every 0.1 s: the head never completes in 0.5 s
            try:
                sock.sendall(b"X")
            except OSError:
                break
            time.sleep(0.1)
        sock.settimeout(3)
        try:
            reply = sock.recv(4096)
        except OSError:
            pass
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert time.monotonic() - start < 3
    with socket.create_connection(srv.server_address[:2], timeout=5) as idle:
        start = time.monotonic()
        assert idle.recv(10) == b""  # closed without a word after IDLE_TIMEOUT
        assert time.monotonic() - start < 3
    _healthy(srv)


def test_connection_count_is_bounded(srv: RegistryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_server, "MAX_CONNECTIONS", 3)
    monkeypatch.setattr(_server, "IDLE_TIMEOUT", 5.0)
    held = [socket.create_connection(srv.server_address[:2], timeout=5) for _ in range(3)]
    try:
        time.sleep(0.2)  # let the server accept them
        reply = _exchange(srv, b"GET /v1/index.json HTTP/1.1\r\n\r\n")
        assert _status(reply) == 503
    finally:
        for s in held:
            s.close()
    time.sleep(0.2)
    _healthy(srv)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_fuzz_request_head_parser(data: bytes) -> None:
    """Any bytes: a parsed request or BadRequest with a 4xx/5xx status, nothing else."""
    for head in (data + b"\r\n\r\n", b"GET /" + data + b" HTTP/1.1\r\n\r\n", G + data + b"\r\n\r\n"):
        try:
            req = parse_head(head)
        except BadRequest as exc:
            assert 400 <= exc.status < 600
        else:
            assert req.method and req.target


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.binary(min_size=1, max_size=300))
def test_fuzz_live_server_always_answers(srv: RegistryServer, data: bytes) -> None:
    """Random bytes on a live connection: an HTTP answer, or a close after a timeout; never a crash."""
    reply = _exchange(srv, data + b"\r\n\r\n", wait=3)
    assert reply == b"" or reply.startswith(b"HTTP/1.1 ")
    _healthy(srv)
