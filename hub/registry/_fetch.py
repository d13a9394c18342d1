"""Bounded HTTP GETs for the registry client: one deadline per request, size limits, safe redirects.

httpx's timeouts are per operation, so a server that drips one byte of headers or body every few
seconds never trips them; and its content decoders inflate whatever arrives. Here every request
(retries and redirects included) runs under one :func:`asyncio.timeout`, bodies are read raw and
inflated by :class:`_Inflater` in bounded steps, and redirects are followed by hand, only to the
registry's own origin or to origins the user configured.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import zlib
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar
from urllib.parse import urljoin, urlsplit

import httpx

from ..errors import RegistryError, RegistryFormatError, RegistryUnavailableError

__all__ = ["Answer", "Fetcher", "origin"]

MAX_REDIRECTS = 5
_STEP = 1 << 20  # most bytes inflated per step
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_T = TypeVar("_T")


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased, with the default port made explicit."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


@dataclass(frozen=True)
class Answer:
    url: str  # after redirects
    status: int
    headers: httpx.Headers
    body: bytes  # empty when the body went to a sink, or for a status other than 200


class _Inflater:
    """Content-Encoding decoding with a cap on the decoded (and the raw) bytes."""

    def __init__(self, encoding: str, limit: int, too_large: Callable[[], RegistryError], url: str) -> None:
        enc = encoding.strip().lower()
        if enc in ("", "identity"):
            self._z: Any = None
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(wbits=31)
        elif enc == "deflate":
            self._z = zlib.decompressobj(wbits=47)  # zlib or gzip framing, as servers vary
        else:
            raise RegistryFormatError(f"{url}: unsupported Content-Encoding {encoding[:40]!r}")
        self.limit, self.too_large, self.url = limit, too_large, url
        self.raw = self.out = 0

    def _count(self, n: int) -> None:
        self.out += n
        if self.out > self.limit:
            raise self.too_large()

    def feed(self, data: bytes) -> list[bytes]:
        self.raw += len(data)
        if self.raw > self.limit + 65536:
            raise self.too_large()
        if self._z is None:
            self._count(len(data))
            return [data]
        pieces = []
        try:
            while data and not self._z.eof:
                piece = self._z.decompress(data, _STEP)
                self._count(len(piece))
                pieces.append(piece)
                data = self._z.unconsumed_tail
        except zlib.error as exc:
            raise RegistryFormatError(f"{self.url}: corrupt compressed body ({exc})") from None
        return pieces

    def finish(self) -> None:
        if self._z is not None and not self._z.eof:
            raise RegistryFormatError(f"{self.url}: compressed body is truncated")


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


class Fetcher:
    """GETs over one private event loop, so connections are reused between calls."""

    def __init__(
        self,
        *,
        base_url: str,
        transport: Any = None,
        timeout: httpx.Timeout | float,
        verify: bool,
        user_agent: str,
        allowed_origins: frozenset[str] = frozenset(),
        retries: int = 2,
    ) -> None:
        self.origins = frozenset({origin(base_url)} | {origin(o) for o in allowed_origins})
        self.retries = retries
        self._opts = {
            "transport": transport,
            "timeout": timeout,
            "verify": verify,
            "headers": {"User-Agent": user_agent, "Accept-Encoding": "gzip"},
        }
        self._loop = asyncio.new_event_loop()
        self._http: httpx.AsyncClient | None = None

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop.run_until_complete(coro)
        # called from code that runs an event loop itself (a notebook): use a helper thread
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(self._loop.run_until_complete, coro).result()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._http is not None:
            self._run(self._http.aclose())
        self._loop.close()

    def check_origin(self, url: str, what: str) -> None:
        if urlsplit(url).scheme.lower() not in ("http", "https"):
            raise RegistryFormatError(f"{what} {url[:200]!r} is not an http(s) URL")
        if origin(url) not in self.origins:
            raise RegistryFormatError(
                f"{what} {url[:200]!r} leaves the registry's origin",
                hint="add the origin to [registry] allowed_origins in the collhub config if it is trusted",
            )

    def get(
        self,
        url: str,
        headers: dict[str, str],
        *,
        deadline: float,
        limit: int,
        too_large: Callable[[], RegistryError],
        sink: BinaryIO | None = None,
        total: float | None = None,
    ) -> Answer:
        """GET ``url`` (retrying 5xx and network errors) within ``deadline`` seconds in all
        (what is left of the caller's ``total``, named in the error)."""
        return self._run(self._get(url, headers, deadline, limit, too_large, sink, total or deadline))

    async def _get(
        self,
        url: str,
        headers: dict[str, str],
        deadline: float,
        limit: int,
        too_large: Callable[[], RegistryError],
        sink: BinaryIO | None,
        total: float,
    ) -> Answer:
        if self._http is None:
            self._http = httpx.AsyncClient(follow_redirects=False, **self._opts)
        last: str = ""
        try:
            async with asyncio.timeout(deadline):
                for attempt in range(self.retries + 1):
                    try:
                        answer = await self._follow(url, headers, limit, too_large, sink)
                    except httpx.HTTPError as exc:
                        last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                        if isinstance(exc, (httpx.ProtocolError, httpx.InvalidURL, httpx.UnsupportedProtocol)):
                            break  # a malformed answer is not transient: do not ask again
                    else:
                        if answer.status < 500:
                            return answer
                        last = f"HTTP {answer.status}"
                    if sink is not None:
                        sink.seek(0)
                        sink.truncate()
                    if attempt < self.retries:
                        await asyncio.sleep(0.2 * (2**attempt))
        except TimeoutError:
            raise RegistryUnavailableError(
                f"{url}: no complete answer within {total:g} s (the registry deadline, for all requests of a command)",
                hint="the registry is slow or stalled; retry later, raise COLLHUB_REGISTRY_DEADLINE, or use --offline",
            ) from None
        if last.startswith("HTTP "):
            raise RegistryUnavailableError(f"{url}: {last}", hint="the registry failed; retry later or use --offline")
        raise RegistryUnavailableError(
            f"cannot reach {url}: {' '.join(last.split())[:300]}", hint="check the URL or use --offline"
        )

    async def _follow(
        self,
        url: str,
        headers: dict[str, str],
        limit: int,
        too_large: Callable[[], RegistryError],
        sink: BinaryIO | None,
    ) -> Answer:
        assert self._http is not None
        for _ in range(MAX_REDIRECTS + 1):
            self.check_origin(url, "URL")
            async with self._http.stream("GET", url, headers=headers) as resp:
                if resp.status_code in _REDIRECTS:
                    location = resp.headers.get("location", "")
                    if not location:
                        raise RegistryFormatError(f"{url}: HTTP {resp.status_code} without a Location")
                    try:
                        url = urljoin(url, location)
                    except ValueError:
                        raise RegistryFormatError(f"{url}: bad redirect Location {location[:200]!r}") from None
                    self.check_origin(url, "redirect to")
                    continue
                if resp.status_code != 200:
                    return Answer(url, resp.status_code, resp.headers, b"")
                body = bytearray()
                if resp.is_stream_consumed:  # built in memory (httpx.MockTransport), decoded already
                    inflater = _Inflater("", limit, too_large, url)
                    raws: Any = _once(resp.content)
                else:
                    inflater = _Inflater(resp.headers.get("content-encoding", ""), limit, too_large, url)
                    raws = resp.aiter_raw()
                async for raw in raws:
                    for piece in inflater.feed(raw):
                        if sink is not None:
                            sink.write(piece)
                        else:
                            body += piece
                inflater.finish()
                return Answer(url, 200, resp.headers, bytes(body))
        raise RegistryFormatError(f"{url}: more than {MAX_REDIRECTS} redirects")
