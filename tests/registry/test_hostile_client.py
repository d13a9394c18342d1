"""The registry client against a hostile loopback server: every lying, slow, inflating, redirecting or
malformed answer ends the CLI with exit 5 (or 2 for a bad argument), one ``error:`` line and a
``hint:``, no traceback, nothing on stdout, nothing left in TMPDIR, within the deadline and
under a memory cap (see hostile_cli.py)."""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.registry.hostile_cli import assert_clean, run_batch, run_many
from tests.registry.hostile_registry import (
    Behaviour,
    HostileRegistry,
    answer,
    drip,
    gzip_bomb,
    gzipped,
    plugin_doc,
    raw,
    silent,
)

DEADLINE = "2"  # COLLHUB_REGISTRY_DEADLINE of every case: slow answers must end by then
WHEEL = b"PK\x05\x06" + bytes(18)  # an empty zip: never installed, only hashed
NAME = "collhub-x"
WHEEL_NAME = "collhub_x-1.0.0-py3-none-any.whl"
INDEX_OK = {"meta": {"api-version": "1.0"}, "plugins": []}


def _nested(depth: int) -> str:
    return '{"meta": {"api-version": "1.0"}, "plugins": ' + "[" * depth + "]" * depth + "}"


def _http(status: str, headers: str, body: bytes = b"") -> bytes:
    return f"HTTP/1.1 {status}\r\n{headers}Connection: close\r\n\r\n".encode() + body


def _index(**plugin: Any) -> dict[str, Any]:
    entry = {"name": NAME, "latest": "1.0.0", **plugin}
    return {"meta": {"api-version": "1.0"}, "plugins": [entry]}


# What `collhub search` reads: v1/index.json. (case id, behaviour)
INDEX_CASES: list[tuple[str, Behaviour]] = [
    ("meta-list", answer({"meta": [], "plugins": []})),
    ("meta-string", answer({"meta": "1.0", "plugins": []})),
    ("meta-missing", answer({"plugins": []})),
    ("api-number", answer({"meta": {"api-version": 1.0}, "plugins": []})),
    ("api-words", answer({"meta": {"api-version": "one.two"}, "plugins": []})),
    ("api-three-parts", answer({"meta": {"api-version": "1.0.0"}, "plugins": []})),
    ("api-huge", answer({"meta": {"api-version": "1" * 5000 + ".0"}, "plugins": []})),
    ("api-newer-major", answer({"meta": {"api-version": "2.0"}, "plugins": []})),
    ("top-list", answer([1, 2, 3])),
    ("top-null", answer("null")),
    ("not-json", answer("<html>hello</html>")),
    ("not-utf8", answer(b'{"meta": {"api-version": "1.0"}, "plugins": ["\xff\xfe"]}')),
    ("nul-bytes", answer(b"\x00" * 1000)),
    ("deep-100k", answer(_nested(100_000))),
    ("deep-40", answer(_nested(40))),
    ("plugins-object", answer({"meta": {"api-version": "1.0"}, "plugins": {}})),
    ("plugins-strings", answer({"meta": {"api-version": "1.0"}, "plugins": ["a", "b"]})),
    ("plugin-no-name", answer({"meta": {"api-version": "1.0"}, "plugins": [{"latest": "1"}]})),
    ("plugin-bad-kind", answer(_index(components=[{"id": "x.p", "kind": "weapon"}]))),
    ("plugin-requires-hub-junk", answer(_index(requires_hub="not a specifier"))),
    ("plugin-latest-int", answer(_index(latest=1))),
    ("plugin-keywords-dict", answer(_index(keywords={"a": 1}))),
    ("too-large-plain", answer(b'{"meta": {"api-version": "1.0"}, "plugins": [], "x": "' + b"a" * (40 << 20) + b'"}')),
    ("gzip-bomb-4gib", gzip_bomb(4)),
    ("gzip-corrupt", answer(b"\x1f\x8b\x08\x00garbage-not-deflate", headers={"Content-Encoding": "gzip"})),
    ("gzip-truncated", answer(gzipped(json.dumps(INDEX_OK).encode())[:-12], headers={"Content-Encoding": "gzip"})),
    ("encoding-br", answer(b"\x0b\x01\x80", headers={"Content-Encoding": "br"})),
    ("length-lies-long", answer(json.dumps(INDEX_OK), length=5000)),
    ("length-lies-short", answer(json.dumps(INDEX_OK), length=3)),
    ("length-junk", raw(_http("200 OK", "Content-Length: twelve\r\n", b"{}"))),
    ("drip-headers", drip(_http("200 OK", "Content-Length: 2\r\n" + "X-Pad: " + "p" * 200 + "\r\n", b"{}"))),
    ("drip-body", drip(_http("200 OK", "Content-Length: 400\r\n", b" " * 400), 0.05)),
    ("silent", silent()),
    ("status-500-forever", answer("boom", "500 Internal Server Error")),
    ("status-404", answer("no", "404 Not Found")),
    ("status-999", answer("?", "999 Weird")),
    ("status-304-no-cache", answer("", "304 Not Modified")),
    ("status-line-junk", raw(b"HTTZ/9 OK\r\n\r\n{}")),
    ("header-no-colon", raw(_http("200 OK", "this is not a header\r\n", b"{}"))),
    ("header-100k", raw(_http("200 OK", "X-Big: " + "b" * 100_000 + "\r\n", b"{}"))),
    ("chunked-bad-size", raw(_http("200 OK", "Transfer-Encoding: chunked\r\n", b"zz\r\nhello\r\n0\r\n\r\n"))),
    ("closed-at-once", raw(b"")),
    ("redirect-other-origin", answer("", "302 Found", {"Location": "http://127.0.0.1:1/v1/index.json"})),
    ("redirect-other-host", answer("", "301 Moved", {"Location": "http://registry.invalid/v1/index.json"})),
    ("redirect-file-scheme", answer("", "307 Temporary Redirect", {"Location": "file:///etc/passwd"})),
    ("redirect-no-location", answer("", "302 Found")),
    ("redirect-bad-location", answer("", "302 Found", {"Location": "http://[::1/x"})),
]


def _doc(base: str, **kw: Any) -> dict[str, Any]:
    return plugin_doc(NAME, f"../../files/{WHEEL_NAME}", WHEEL, **kw)


# What `collhub install NAME --dry-run` reads: v1/plugins/NAME.json (resolution only).
RESOLVE_CASES: list[tuple[str, dict[str, Any] | Behaviour]] = [
    ("requires-hub-junk", {"requires_hub": ">=>=1"}),
    ("requires-hub-words", {"requires_hub": "the latest"}),
    ("requires-python-junk", {"requires_python": "python3"}),
    ("api-version-words", {"api_version": "one"}),
    ("api-version-int", {"api_version": 1}),
    ("yanked-string", {"yanked": "maybe"}),
    ("files-not-list", {"files": {"a": 1}}),
    (
        "file-other-origin",
        {
            "files": [
                {"filename": WHEEL_NAME, "url": "http://127.0.0.1:1/x.whl", "hashes": {"sha256": "0" * 64}, "size": 1}
            ]
        },
    ),
    (
        "file-file-scheme",
        {"files": [{"filename": WHEEL_NAME, "url": "file:///etc/passwd", "hashes": {"sha256": "0" * 64}, "size": 1}]},
    ),
    (
        "file-name-traversal",
        {
            "files": [
                {"filename": "../../evil.whl", "url": "../../files/x.whl", "hashes": {"sha256": "0" * 64}, "size": 1}
            ]
        },
    ),
    (
        "file-size-negative",
        {
            "files": [
                {"filename": WHEEL_NAME, "url": f"../../files/{WHEEL_NAME}", "hashes": {"sha256": "0" * 64}, "size": -1}
            ]
        },
    ),
    ("file-no-sha", {"files": [{"filename": WHEEL_NAME, "url": f"../../files/{WHEEL_NAME}", "hashes": {}, "size": 1}]}),
    ("manifest-missing", {"manifest": None}),
    ("latest-unknown", answer({**plugin_doc(NAME, "x", WHEEL), "latest": "9.9"})),
    ("versions-list", answer({**plugin_doc(NAME, "x", WHEEL), "versions": []})),
    ("meta-list-plugin", answer({**plugin_doc(NAME, "x", WHEEL), "meta": []})),
]

# What `collhub install NAME` downloads (the plugin document is correct, the wheel answer is not).
_SHA = hashlib.sha256(WHEEL).hexdigest()
DOWNLOAD_CASES: list[tuple[str, Behaviour, dict[str, Any]]] = [
    ("wheel-longer", answer(WHEEL + b"extra bytes", headers={"Content-Type": "application/zip"}), {}),
    ("wheel-shorter", answer(WHEEL[:10], headers={"Content-Type": "application/zip"}), {}),
    ("wheel-sha-mismatch", answer(WHEEL, headers={"Content-Type": "application/zip"}), {"sha": "f" * 64}),
    ("wheel-drip", drip(_http("200 OK", f"Content-Length: {len(WHEEL)}\r\n", WHEEL), 0.2), {}),
    ("wheel-gzip-bomb", gzip_bomb(4), {}),
    ("wheel-redirect-away", answer("", "302 Found", {"Location": "http://127.0.0.1:1/w.whl"}), {}),
    ("wheel-404", answer("no", "404 Not Found"), {}),
    ("wheel-500", answer("no", "503 Busy"), {}),
    ("wheel-too-large-claim", answer(WHEEL), {"size": 10 << 30}),
]

# Arguments and environment that are wrong before any request (exit 2).
USAGE_CASES: list[tuple[str, list[str], dict[str, str]]] = [
    ("url-ftp", ["search", "-r", "ftp://example.org/"], {}),
    ("url-broken-ipv6", ["search", "-r", "http://[::1/"], {}),
    ("url-bad-port", ["search", "-r", "http://127.0.0.1:99999/"], {}),
    ("deadline-words", ["search", "-r", "http://127.0.0.1:9/"], {"COLLHUB_REGISTRY_DEADLINE": "soon"}),
    ("deadline-negative", ["search", "-r", "http://127.0.0.1:9/"], {"COLLHUB_REGISTRY_DEADLINE": "-3"}),
    ("serve-port-99999", ["registry", "serve", ".", "--port", "99999"], {}),
    ("serve-port-negative", ["registry", "serve", ".", "--port", "-1"], {}),
    ("install-bad-requirement", ["install", "collhub-x>>>1", "--dry-run", "-r", "http://127.0.0.1:9/"], {}),
    ("install-bad-name", ["install", "../etc", "--dry-run", "-r", "http://127.0.0.1:9/"], {}),
]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileRegistry]:
    with HostileRegistry() as srv:
        for case, behaviour in INDEX_CASES:
            srv.routes[f"/{case}/v1/index.json"] = behaviour
        for case, spec in RESOLVE_CASES:
            doc = spec if callable(spec) else answer(_doc("", **{k: v for k, v in spec.items()}))
            srv.routes[f"/{case}/v1/plugins/{NAME}.json"] = doc
        for case, behaviour, kw in DOWNLOAD_CASES:
            srv.routes[f"/{case}/v1/plugins/{NAME}.json"] = answer(_doc("", **kw))
            srv.routes[f"/{case}/files/{WHEEL_NAME}"] = behaviour
        yield srv


def _env(tmp: Path, case: str) -> dict[str, str]:
    (tmp / case / "tmp").mkdir(parents=True)
    return {
        "COLLHUB_REGISTRY_DEADLINE": DEADLINE,
        "COLLHUB_CACHE_DIR": str(tmp / case / "cache"),
        "TMPDIR": str(tmp / case / "tmp"),
        "COLLHUB_CONFIG": str(tmp / "none.toml"),
    }


def _check_all(tmp: Path, cases: list[tuple[str, list[str], dict[str, str]]], rc: int, *, batch: bool = True) -> None:
    pairs = [(args, env) for _, args, env in cases]
    ran = run_batch(pairs, jobs=3) if batch else run_many(pairs)
    for (case, _, _), result in zip(cases, ran, strict=False):
        assert_clean(result, rc)
        leftovers = list((tmp / case / "tmp").iterdir()) if (tmp / case / "tmp").exists() else []
        assert leftovers == [], f"{case}: left {leftovers}"


def test_hostile_index_answers(hostile: HostileRegistry, tmp_path: Path) -> None:
    cases = [(c, ["search", "x", "-r", f"{hostile.url}{c}/"], _env(tmp_path, c)) for c, _ in INDEX_CASES]
    _check_all(tmp_path, cases, 5)


@pytest.mark.parametrize("case", ["gzip-bomb-4gib"])
def test_hostile_index_answers_one_process_each(hostile: HostileRegistry, tmp_path: Path, case: str) -> None:
    """The same through the console entry point, one process per case, for a few of them."""
    _check_all(tmp_path, [(case, ["search", "x", "-r", f"{hostile.url}{case}/"], _env(tmp_path, case))], 5, batch=False)


def test_hostile_plugin_documents(hostile: HostileRegistry, tmp_path: Path) -> None:
    cases = [
        (c, ["install", NAME, "--dry-run", "-r", f"{hostile.url}{c}/"], _env(tmp_path, c)) for c, _ in RESOLVE_CASES
    ]
    _check_all(tmp_path, cases, 5)


def test_hostile_wheel_downloads_install_nothing(hostile: HostileRegistry, tmp_path: Path) -> None:
    cases = [(c, ["install", NAME, "-r", f"{hostile.url}{c}/"], _env(tmp_path, c)) for c, _, _ in DOWNLOAD_CASES]
    _check_all(tmp_path, cases, 5)


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    cases = [(c, args, {**_env(tmp_path, c), **env}) for c, args, env in USAGE_CASES]
    _check_all(tmp_path, cases, 2)


def test_same_origin_redirect_is_followed_and_gzip_is_read(tmp_path: Path) -> None:
    """The positive side: a redirect within the origin and a gzip body work (in-process)."""
    from hub.registry import RegistryClient

    body = json.dumps(_index()).encode()
    with HostileRegistry() as srv:
        srv.routes["/old/v1/index.json"] = answer("", "301 Moved", {"Location": "/new/v1/index.json"})
        srv.routes["/new/v1/index.json"] = answer(zlib.compress(body, wbits=31), headers={"Content-Encoding": "gzip"})
        with RegistryClient(f"{srv.url}old/", cache_dir=tmp_path, deadline=5) as client:
            assert [p.name for p in client.index().plugins] == [NAME]
        # another origin is refused unless configured
        srv.routes["/away/v1/index.json"] = answer(
            "", "302 Found", {"Location": f"http://localhost:{srv.port}/new/v1/index.json"}
        )
        from hub.errors import RegistryFormatError

        with RegistryClient(f"{srv.url}away/", cache_dir=tmp_path / "a", deadline=5) as client:
            with pytest.raises(RegistryFormatError, match="leaves the registry's origin"):
                client.index()
        with RegistryClient(
            f"{srv.url}away/", cache_dir=tmp_path / "b", deadline=5, allowed_origins=[f"http://localhost:{srv.port}"]
        ) as client:
            assert [p.name for p in client.index().plugins] == [NAME]


def test_deadline_ends_a_slow_drip_in_time(tmp_path: Path) -> None:
    """One deadline for the whole request: a byte every 0.2 s never trips httpx's per-read
    timeout, but the request still ends after ~1 s."""
    import time

    from hub.errors import RegistryUnavailableError
    from hub.registry import RegistryClient

    with HostileRegistry() as srv:
        srv.routes["/v1/index.json"] = drip(
            _http("200 OK", "Content-Length: 2\r\n" + "X: " + "x" * 500 + "\r\n", b"{}"), 0.2
        )
        with RegistryClient(srv.url, cache_dir=tmp_path, deadline=1.0, retries=0) as client:
            start = time.monotonic()
            with pytest.raises(RegistryUnavailableError, match="within 1 s") as info:
                client.index()
            assert time.monotonic() - start < 3
            assert info.value.hint


# --- one deadline per command (issue 26) -------------------------------------------------------


def _late(behaviour: Behaviour, seconds: float) -> Behaviour:
    """``behaviour``, after ``seconds`` of silence."""
    import asyncio

    async def run(w: Any) -> None:
        await asyncio.sleep(seconds)
        await behaviour(w)

    return run


def test_the_deadline_covers_the_whole_command(tmp_path: Path) -> None:
    """`install` asks twice (the plugin document, the wheel); each answer alone fits the 2 s
    deadline, both together do not: the command ends at the deadline, not after each answer."""
    with HostileRegistry() as srv:
        srv.routes[f"/v1/plugins/{NAME}.json"] = _late(answer(_doc("")), 1.3)
        srv.routes[f"/files/{WHEEL_NAME}"] = _late(answer(WHEEL, headers={"Content-Type": "application/zip"}), 1.3)
        env = _env(tmp_path, "two-slow")
        [ran] = run_many([(["install", NAME, "--force", "-r", srv.url], env)])
    assert_clean(ran, 5)
    assert "registry deadline" in ran.stderr or "deadline of 2 s" in ran.stderr, ran.stderr
    assert ran.wall < 2 + 8  # the deadline, plus a generous interpreter start on a loaded machine


@pytest.mark.parametrize(
    "argv",
    [["search", "x"], ["plugins", "info", NAME, "--remote"], ["install", NAME, "--force"]],
    ids=["search", "info-remote", "install-force"],
)
def test_dripping_headers_end_every_registry_command(tmp_path: Path, argv: list[str]) -> None:
    drip_head = drip(_http("200 OK", "X-Pad: " + "p" * 400 + "\r\n"), 0.05)
    with HostileRegistry() as srv:
        for route in ("/v1/index.json", f"/v1/plugins/{NAME}.json", f"/files/{WHEEL_NAME}"):
            srv.routes[route] = drip_head
        [ran] = run_many([([*argv, "-r", srv.url], _env(tmp_path, argv[0] + argv[-1].strip("-")))])
    assert_clean(ran, 5)


def test_the_default_deadline_is_at_most_30_s() -> None:
    from hub.registry._client import DEFAULT_DEADLINE, _env_deadline

    assert DEFAULT_DEADLINE <= 30
    assert _env_deadline() <= 30 or "COLLHUB_REGISTRY_DEADLINE" in __import__("os").environ
