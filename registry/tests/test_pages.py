"""The site's pages for people: one static page per plugin, an index that works without JavaScript,
an install command that works as it is printed. Real wheels, a real server on loopback, headless
Chromium for what a browser shows (skipped with a reason when there is none)."""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from html import unescape
from pathlib import Path

import httpx
import pytest

from collhub_registry import RegistryServer, build_site, make_server


def _chromium() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium") or shutil.which("chromium-browser")


needs_browser = pytest.mark.skipif(
    _chromium() is None, reason="headless Chromium not installed (make test installs it with apt-get)"
)


def _browser(*args: str) -> subprocess.CompletedProcess[str]:
    browser = _chromium()
    assert browser
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", *args],
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.fixture
def served(site: Path) -> Iterator[RegistryServer]:
    srv = make_server(site, "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _sections(html: str) -> dict[str, bool]:
    """data-name -> visible, for each plugin section of an index page (as a browser left it)."""
    return {
        m["name"]: "hidden" not in m["attrs"]
        for m in re.finditer(r'<section class="plugin" data-name="(?P<name>[^"]+)"(?P<attrs>[^>]*)>', html)
    }


def test_one_page_per_plugin_with_versions_hashes_dates_and_components(site: Path) -> None:
    assert sorted(p.name for p in (site / "plugins").iterdir()) == ["collhub-other.html", "collhub-sample.html"]
    page = (site / "plugins" / "collhub-other.html").read_text()
    for wheel in sorted((site / "files").glob("collhub_other-*.whl")):
        # hash and date computed here from the published file, not taken from the index
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        day = datetime.fromtimestamp(wheel.stat().st_mtime, UTC).date().isoformat()
        row = next(r for r in page.split("<tr>") if wheel.name in r)
        assert digest in row and f"<td>{day}</td>" in row and f'href="../files/{wheel.name}"' in row
    assert "<td>0.4.0</td>" in page and "<td>0.3.0</td>" in page and "<td>&gt;=99</td>" in page
    assert "<b>other.replay</b>" in page and "allreduce, allgather" in page
    assert "<li>collhub &gt;=99</li>" in page and "<li>Python &gt;=3.11</li>" in page  # of the latest, 0.4.0
    # no --url at build time: the command names the placeholder, and says so
    assert "collhub install collhub-other --registry SITE_URL" in page and 'id="url-note"' in page


def test_hostile_manifest_text_is_escaped(tmp_path: Path, wheels: dict[str, Path]) -> None:
    from tests.registry.wheels import build_wheel, write_plugin_project

    evil = write_plugin_project(
        tmp_path / "src",
        dist="collhub-evil",
        plugin="evil",
        version="1.0",
        components='[[components]]\nkind = "producer"\nname = "x"\nsummary = "<script>alert(1)</script>{{links}}"\n',
        manifest_extra='[urls]\nhomepage = "javascript:alert(1)"\nsource = "https://example.org/?a=1&b=<2>"\n',
    )
    (tmp_path / "w").mkdir()
    site = tmp_path / "site"
    build_site([build_wheel(evil, tmp_path / "w")], site)
    for page in (site / "index.html", site / "plugins" / "collhub-evil.html"):
        text = page.read_text()
        assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;{{links}}" in text
    plugin = (site / "plugins" / "collhub-evil.html").read_text()
    assert "javascript:" not in plugin and 'href="https://example.org/?a=1&amp;b=&lt;2&gt;"' in plugin


def test_install_command_on_the_page_works_as_printed(
    site: Path, served: RegistryServer, wheels: dict[str, Path]
) -> None:
    build_site(wheels.values(), site, base_url=served.url, force=True)  # the same site, now knowing its address
    page = httpx.get(served.url + "plugins/collhub-sample.html", timeout=10).text
    found = re.search(r'<pre class="install" id="install"[^>]*>(.*?)</pre>', page, re.S)
    assert found, page
    command = unescape(found[1])
    assert command == f"collhub install collhub-sample --registry {served.url}"
    argv = shlex.split(command)
    assert argv[0] == "collhub"
    # as printed, plus --dry-run: resolve, download and verify sha256 + size, but leave this venv alone
    p = subprocess.run(
        [sys.executable, "-m", "hub.cli", *argv[1:], "--dry-run"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert "collhub-sample" in p.stdout and "1.2.0" in p.stdout and "would install" in p.stdout


@needs_browser
def test_index_works_without_javascript_and_search_narrows_it(
    site: Path, served: RegistryServer, tmp_path: Path
) -> None:
    html = httpx.get(served.url, timeout=10).text
    # the same page with its script removed, as a browser without JavaScript has it
    bare = tmp_path / "bare.html"
    bare.write_text(
        re.sub(r"<script>.*?</script>", "", html, flags=re.S)
        .replace('href="site.css"', f'href="{served.url}site.css"')
        .replace('href="plugins/', f'href="{served.url}plugins/')
    )
    dom = _browser("--dump-dom", bare.as_uri())
    assert dom.returncode == 0, dom.stderr[-500:]
    assert _sections(dom.stdout) == {"collhub-other": True, "collhub-sample": True}
    assert '<div id="count">2 plugins</div>' in dom.stdout and 'id="controls" hidden' in dom.stdout
    for name in ("collhub-other", "collhub-sample"):  # every plugin links to its page, which is there
        assert f'href="{served.url}plugins/{name}.html"' in dom.stdout
        assert httpx.get(f"{served.url}plugins/{name}.html", timeout=10).status_code == 200
    shot = tmp_path / "index-no-js.png"
    _browser(f"--screenshot={shot}", "--window-size=1100,700", bare.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    narrowed = _browser("--dump-dom", served.url + "?q=pairs")
    assert _sections(narrowed.stdout) == {"collhub-other": False, "collhub-sample": True}
    assert '<div id="count">1 of 2 plugins</div>' in narrowed.stdout


@needs_browser
def test_plugin_page_in_a_browser_fills_in_the_registry_url(site: Path, served: RegistryServer, tmp_path: Path) -> None:
    dom = _browser("--dump-dom", served.url + "plugins/collhub-other.html")
    assert dom.returncode == 0, dom.stderr[-500:]
    pre = re.search(r'<pre class="install" id="install"[^>]*>(.*?)</pre>', dom.stdout, re.S)
    assert pre and unescape(pre[1]) == f"collhub install collhub-other --registry {served.url}"
    assert re.search(r'id="url-note"[^>]*hidden', dom.stdout)
    shot = tmp_path / "plugin.png"
    _browser(f"--screenshot={shot}", "--window-size=1100,900", served.url + "plugins/collhub-other.html")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_pages_built_for_one_address_take_the_one_they_are_served_from(tmp_path: Path, wheels: dict[str, Path]) -> None:
    # The build-time --url is what the pages' script swaps for the address they are read from
    # (a site copied elsewhere, or served on another port, shows commands that work there).
    site = tmp_path / "site"
    build_site(wheels.values(), site, base_url="http://built.example:8000/")
    page = next((site / "plugins").glob("*.html")).read_text()
    assert 'data-placeholder="http://built.example:8000/"' in page
    assert "--registry http://built.example:8000/" in page and "split(placeholder).join(base)" in page
    index = (site / "index.html").read_text()
    assert 'id="top" data-placeholder="http://built.example:8000/"' in index.replace(
        'data-placeholder="http://built.example:8000/" id="top"',
        'id="top" data-placeholder="http://built.example:8000/"',
    )
    assert "split(built).join(served)" in index
