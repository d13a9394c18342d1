from __future__ import annotations

import http.client
import re
import shutil
import subprocess
from urllib.parse import urlsplit

import httpx
import pytest

from collhub_registry import RegistryServer


def _raw_get(server: RegistryServer, path: str) -> int:
    """Send a path exactly as given (httpx would normalise ``..`` away)."""
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=5)
    conn.request("GET", path)
    status = conn.getresponse().status
    conn.close()
    return status


def test_serves_json_with_etag_and_304(server: RegistryServer) -> None:
    with httpx.Client(base_url=server.url) as client:
        first = client.get("/v1/index.json")
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("application/json")
        etag = first.headers["etag"]
        again = client.get("/v1/index.json", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        page = client.get("/")
        assert page.headers["content-type"].startswith("text/html")
        wheel = client.get("/files/collhub_sample-1.2.0-py3-none-any.whl")
        assert wheel.headers["content-type"] == "application/zip"
        assert client.get("/v1/nope.json").status_code == 404
        assert client.post("/v1/index.json").status_code == 405


@pytest.mark.parametrize(
    "path",
    [
        "/../../etc/passwd",
        "/v1/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/v1%2f..%2f..%2fetc",
        "/files/.hidden",
        "/a\\b",
    ],
)
def test_path_traversal_is_refused(server: RegistryServer, path: str) -> None:
    assert _raw_get(server, path) in (400, 404)


def _chromium() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium") or shutil.which("chromium-browser")


def _dump_dom(url: str) -> str:
    browser = _chromium()
    assert browser
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-1000:]
    return proc.stdout


def _visible(dom: str) -> list[str]:
    """The plugin sections the search left visible (the page renders all; the script hides some)."""
    return sorted(
        m[1] for m in re.finditer(r'<section class="plugin" data-name="([^"]+)"([^>]*)>', dom) if "hidden" not in m[2]
    )


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium not installed (make test installs it with apt-get)")
def test_html_page_loads_and_search_narrows_the_list(server: RegistryServer) -> None:
    everything = _dump_dom(server.url)
    assert '<div id="count">2 of 2 plugins' in everything
    assert _visible(everything) == ["collhub-other", "collhub-sample"]
    narrowed = _dump_dom(server.url + "?q=pairs")
    assert '<div id="count">1 of 2 plugins' in narrowed
    assert _visible(narrowed) == ["collhub-sample"]
    by_kind = _dump_dom(server.url + "?kind=consumer&collective=allgather")
    assert _visible(by_kind) == ["collhub-other"]
    assert urlsplit(server.url).hostname == "127.0.0.1"
