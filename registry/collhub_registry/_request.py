"""Parse one HTTP/1.x request head strictly, for the registry server.

Anything outside the small subset a read-only file server needs is a :class:`BadRequest` with
the status to answer (400, 414, 431, 501, 505), never an exception inside the connection handler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from http import HTTPStatus

__all__ = ["MAX_HEADERS", "MAX_TARGET", "BadRequest", "Request", "parse_head"]

MAX_TARGET = 2048  # longest request target (a registry path is < 300 characters)
MAX_HEADERS = 64  # header fields per request
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 token
_VERSION = re.compile(r"^HTTP/1\.[01]$")
_TARGET = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII; no spaces or control characters
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # control characters but tab, CR and LF
_FIELD = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*")  # name ":" OWS value OWS


class BadRequest(Exception):
    """The head is malformed; answer ``status`` with ``reason`` and close the connection."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    version: str
    headers: dict[str, str]

    @property
    def close(self) -> bool:
        """Whether the connection ends after this answer."""
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" not in connection
        return "close" in connection


def _request_line(line: str) -> tuple[str, str, str]:
    parts = line.split(" ")
    if len(parts) != 3:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed request line")
    method, target, version = parts
    if not _TOKEN.match(method):
        raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed method")
    if not version.startswith("HTTP/"):
        raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed HTTP version")
    if not _VERSION.match(version):
        raise BadRequest(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "only HTTP/1.0 and HTTP/1.1")
    if len(target) > MAX_TARGET:
        raise BadRequest(HTTPStatus.REQUEST_URI_TOO_LONG, f"request target longer than {MAX_TARGET}")
    if not _TARGET.match(target) or not (target.startswith("/") or target.startswith(("http://", "https://"))):
        raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed request target")
    return method, target, version


def _content_length(headers: dict[str, str]) -> None:
    """A read-only server takes no request bodies: any body (or a malformed length) is refused."""
    if "transfer-encoding" in headers:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "request bodies are not accepted")
    value = headers.get("content-length")
    if value is None:
        return
    if not value.isascii() or not value.isdigit() or len(value) > 18:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed Content-Length")
    if int(value) != 0:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "request bodies are not accepted")


def parse_head(head: bytes) -> Request:
    """Parse the bytes up to and including the blank line that ends a request head."""
    text = head.decode("latin-1")  # never fails; field values may carry obs-text
    if not text.endswith("\r\n\r\n"):
        raise BadRequest(HTTPStatus.BAD_REQUEST, "request head does not end in CRLF CRLF")
    crlf = text.count("\r\n")
    if _CONTROL.search(text) or text.count("\r") != crlf or text.count("\n") != crlf:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "control character, bare CR or bare LF in the request head")
    lines = text[:-4].split("\r\n")
    method, target, version = _request_line(lines[0])
    if len(lines) - 1 > MAX_HEADERS:
        raise BadRequest(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, f"more than {MAX_HEADERS} header fields")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        match = _FIELD.fullmatch(line)
        if match is None:  # also refuses obs-fold (a line starting with space) and an empty name
            raise BadRequest(HTTPStatus.BAD_REQUEST, "malformed header field")
        name, value = match.groups()
        key = name.lower()
        if key in headers:
            if key in ("content-length", "host", "transfer-encoding"):
                raise BadRequest(HTTPStatus.BAD_REQUEST, f"repeated {name} header")
            value = f"{headers[key]}, {value}"
        headers[key] = value
    _content_length(headers)
    return Request(method, target, version, headers)
