"""Client unit tests over httpx.MockTransport, plus integration against the real loopback server."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from collhub_registry import RegistryServer
from hub.errors import (
    IncompatiblePluginError,
    IntegrityError,
    RegistryError,
    RegistryFormatError,
    RegistryUnavailableError,
    UsageError,
)
from hub.registry import RegistryClient

BASE = "https://registry.example/"


def _index(api: str = "1.0", **extra: object) -> dict:
    return {
        "meta": {"api-version": api},
        "plugins": [
            {
                "name": "collhub-a",
                "summary": "ring things",
                "latest": "1.0",
                "keywords": ["ring"],
                "components": [{"id": "a.ring", "kind": "producer", "collectives": ["allreduce"]}],
                **extra,
            },
            {
                "name": "collhub-b",
                "summary": "replay",
                "latest": "2.0",
                "components": [{"id": "b.replay", "kind": "consumer", "collectives": ["alltoall"]}],
            },
        ],
    }


def _client(handler: Callable[[httpx.Request], httpx.Response], tmp_path: Path, **kw: object) -> RegistryClient:
    return RegistryClient(BASE, transport=httpx.MockTransport(handler), cache_dir=tmp_path / "cache", **kw)  # type: ignore[arg-type]


def test_search_filters_by_text_kind_and_collective(tmp_path: Path) -> None:
    client = _client(lambda req: httpx.Response(200, json=_index()), tmp_path)
    assert [p.name for p in client.search("ring")] == ["collhub-a"]
    assert [p.name for p in client.search(kind="consumer")] == ["collhub-b"]
    assert [p.name for p in client.search(collective="alltoall")] == ["collhub-b"]
    assert client.search("nothing-matches") == []


def test_newer_major_is_refused_newer_minor_warns_and_unknown_keys_ignored(tmp_path: Path) -> None:
    with pytest.raises(RegistryFormatError, match="newer"):
        _client(lambda req: httpx.Response(200, json=_index("2.0")), tmp_path).index()
    client = _client(lambda req: httpx.Response(200, json=_index("1.7", shiny_new_key=1)), tmp_path / "b")
    with pytest.warns(UserWarning, match="1.7"):
        index = client.index()
    assert len(index.plugins) == 2


def test_etag_cache_and_offline_fallback(tmp_path: Path) -> None:
    seen: list[str | None] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req.headers.get("if-none-match"))
        if req.headers.get("if-none-match") == '"v1"':
            return httpx.Response(304)
        return httpx.Response(200, json=_index(), headers={"ETag": '"v1"'})

    client = _client(handler, tmp_path)
    assert len(client.index().plugins) == 2
    assert len(client.index().plugins) == 2
    assert seen == [None, '"v1"']

    def down(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    offline = _client(down, tmp_path, retries=0)
    with pytest.warns(UserWarning, match="cached"):
        assert len(offline.index().plugins) == 2
    with pytest.raises(RegistryUnavailableError):
        _client(down, tmp_path / "empty", retries=0).index()


def test_retries_server_errors(tmp_path: Path) -> None:
    calls = []

    def flaky(req: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503) if len(calls) < 3 else httpx.Response(200, json=_index())

    assert len(_client(flaky, tmp_path, retries=2).index().plugins) == 2
    assert len(calls) == 3


def test_bad_documents_give_format_errors(tmp_path: Path) -> None:
    with pytest.raises(RegistryFormatError, match="not JSON"):
        _client(lambda r: httpx.Response(200, content=b"<html>"), tmp_path).index()
    with pytest.raises(RegistryFormatError, match="object"):
        _client(lambda r: httpx.Response(200, json=[1, 2]), tmp_path / "b").index()
    with pytest.raises(UsageError):
        _client(lambda r: httpx.Response(200, json=_index()), tmp_path / "c").plugin("../../etc")


def _plugin_doc(data: bytes, *, size: int | None = None, sha: str | None = None, requires_hub: str = "") -> dict:
    import hashlib

    manifest = {"name": "collhub-a", "plugin": "a", "api_version": "1.0", "components": []}
    return {
        "meta": {"api-version": "1.0"},
        "name": "collhub-a",
        "latest": "1.0",
        "versions": {
            "1.0": {
                "api_version": "1.0",
                "requires_hub": requires_hub,
                "manifest": manifest,
                "files": [
                    {
                        "filename": "collhub_a-1.0-py3-none-any.whl",
                        "url": "../../files/collhub_a-1.0-py3-none-any.whl",
                        "hashes": {"sha256": sha or hashlib.sha256(data).hexdigest()},
                        "size": len(data) if size is None else size,
                    }
                ],
            }
        },
    }


def _serving(doc: dict, data: bytes) -> Callable[[httpx.Request], httpx.Response]:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/v1/plugins/collhub-a.json":
            return httpx.Response(200, json=doc)
        if req.url.path == "/files/collhub_a-1.0-py3-none-any.whl":
            return httpx.Response(200, content=data)
        return httpx.Response(404)

    return handler


@pytest.mark.parametrize(
    "tamper",
    [
        {"sha": "0" * 64},  # hash mismatch
        {"size": 3},  # more bytes than promised
        {"size": 10_000},  # fewer bytes than promised
    ],
)
def test_integrity_failures_install_nothing(tmp_path: Path, tamper: dict) -> None:
    data = b"PK\x03\x04 not really a wheel"
    client = _client(_serving(_plugin_doc(data, **tamper), data), tmp_path)
    plan = client.resolve("collhub-a")
    assert plan.url == "https://registry.example/files/collhub_a-1.0-py3-none-any.whl"
    dest = tmp_path / "dl"
    dest.mkdir()
    with pytest.raises(IntegrityError):
        client.install(["collhub-a"], python=str(tmp_path / "no-such-python"))
    with pytest.raises(IntegrityError):
        client.download(plan, dest)
    assert list(dest.iterdir()) == []


def test_incompatible_requires_hub_is_refused(tmp_path: Path) -> None:
    data = b"x"
    client = _client(_serving(_plugin_doc(data, requires_hub=">=99"), data), tmp_path)
    with pytest.raises(IncompatiblePluginError, match="needs collhub>=99"):
        client.resolve("collhub-a")


def test_no_registry_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COLLHUB_REGISTRY_URL", raising=False)
    monkeypatch.setenv("COLLHUB_CONFIG", str(tmp_path / "none.toml"))
    with pytest.raises(UsageError, match="no plugin registry"):
        RegistryClient()
    (tmp_path / "c.toml").write_text('[registry]\nurl = "http://127.0.0.1:9/"\n')
    monkeypatch.setenv("COLLHUB_CONFIG", str(tmp_path / "c.toml"))
    assert RegistryClient().base_url == "http://127.0.0.1:9/"


# -- integration against the real server -----------------------------------------------------


def test_real_server_search_info_and_resolution(server: RegistryServer, tmp_path: Path) -> None:
    with RegistryClient(server.url, cache_dir=tmp_path) as client:
        assert [p.name for p in client.search("pairs")] == ["collhub-sample"]
        doc = client.plugin("collhub_other")  # names are normalised
        assert set(doc.versions) == {"0.3.0", "0.4.0"}
        plan = client.resolve("collhub-other")  # 0.4.0 needs collhub>=99, so 0.3.0 is chosen
        assert plan.version == "0.3.0"
        with pytest.raises(IncompatiblePluginError):
            client.resolve("collhub-other==0.4.0")


def test_a_registry_miss_is_said_in_the_users_words(server: RegistryServer, tmp_path: Path) -> None:
    with RegistryClient(server.url, cache_dir=tmp_path) as client:
        with pytest.raises(RegistryError) as info:
            client.plugin("collhub-sampel")
    assert info.value.message == f"the registry at {server.url} has no plugin named 'collhub-sampel'"
    assert info.value.hint == "did you mean collhub-sample?"
    assert "v1/plugins" not in info.value.message  # not a URL


def _make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(path)
    return path / "bin" / "python"


def test_install_into_a_fresh_venv_and_refuse_a_tampered_wheel(
    server: RegistryServer, site: Path, tmp_path: Path
) -> None:
    target = _make_venv(tmp_path / "venv")
    with RegistryClient(server.url, cache_dir=tmp_path / "cache") as client:
        plans = client.install(["collhub-sample>=1"], python=str(target))
        assert [(p.name, p.version) for p in plans] == [("collhub-sample", "1.2.0")]
        out = subprocess.run(
            [str(target), "-c", "import collhub_sample; print(collhub_sample.MARKER)"], capture_output=True, text=True
        )
        assert out.stdout.strip() == "installed", out.stderr
        # Tamper with the served wheel after indexing: nothing may be installed.
        wheel = site / "files" / "collhub_other-0.3.0-py3-none-any.whl"
        wheel.write_bytes(wheel.read_bytes()[:-10] + b"0123456789")
        with pytest.raises(IntegrityError, match="sha256"):
            client.install(["collhub-other"], python=str(target))
    check = subprocess.run([str(target), "-c", "import collhub_other"], capture_output=True, text=True)
    assert check.returncode != 0


def test_json_contract_survives_roundtrip(site: Path) -> None:
    from hub.registry import IndexDoc, PluginDoc

    IndexDoc.model_validate(json.loads((site / "v1" / "index.json").read_text()))
    PluginDoc.model_validate(json.loads((site / "v1" / "plugins" / "collhub-sample.json").read_text()))
    assert sys.version_info >= (3, 11)
