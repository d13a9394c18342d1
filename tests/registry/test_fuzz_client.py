"""Property-based fuzzing of the registry client's document handling (Hypothesis, in-process over
httpx.MockTransport: the transport is not what is fuzzed here, see test_hostile_client.py).

Property: whatever JSON (or bytes) the registry serves, ``index()``, ``search()`` and ``resolve()``
return or raise a :class:`RegistryError` (exit 5) with a one-line message and a hint; nothing else.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings, strategies as st

from hub.errors import RegistryError
from hub.registry import RegistryClient

BASE = "https://registry.example/"
GOOD_INDEX: dict[str, Any] = {
    "meta": {"api-version": "1.0"},
    "plugins": [
        {
            "name": "collhub-a",
            "summary": "s",
            "latest": "1.0",
            "keywords": ["k"],
            "requires_hub": ">=0.1",
            "components": [{"id": "a.p", "kind": "producer", "collectives": ["allreduce"]}],
        }
    ],
}
GOOD_PLUGIN: dict[str, Any] = {
    "meta": {"api-version": "1.0"},
    "name": "collhub-a",
    "latest": "1.0",
    "versions": {
        "1.0": {
            "requires_hub": ">=0.1",
            "requires_python": ">=3.11",
            "api_version": "1.0",
            "yanked": False,
            "manifest": {
                "name": "collhub-a",
                "plugin": "a",
                "api_version": "1.0",
                "requires_hub": ">=0.1",
                "components": [{"kind": "producer", "name": "p", "collectives": ["allreduce"]}],
            },
            "files": [
                {
                    "filename": "collhub_a-1.0-py3-none-any.whl",
                    "url": "../../files/collhub_a-1.0-py3-none-any.whl",
                    "hashes": {"sha256": "0" * 64},
                    "size": 10,
                }
            ],
        }
    },
}

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["1.0", "2.0", "1.x", ">=0.1", ">=>=1", "", "../x", "collhub-a", "producer"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``doc`` (dict keys and list indexes)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    doc = json.loads(json.dumps(doc))
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def mutated(draw: st.DrawFn, good: dict[str, Any]) -> Any:
    doc = good
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        doc = _mutate(doc, path, draw(JSON), delete=bool(path) and draw(st.booleans()))
    return doc


def _check(serve: bytes, action: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=serve, headers={"Content-Type": "application/json"})

    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a newer minor api-version warns; that is allowed
        client = RegistryClient(
            BASE,
            transport=httpx.MockTransport(handler),
            cache_dir=Path(cache),
            retries=0,
            deadline=10,
            allowed_origins=[],
        )
        try:
            if action == "search":
                client.search("a")
            else:
                client.resolve("collhub-a", hub_version="1.0")
        except RegistryError as exc:
            assert "\n" not in exc.message and exc.hint, exc
        finally:
            client.close()


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(mutated(GOOD_INDEX))
def test_fuzz_index_documents(doc: Any) -> None:
    _check(json.dumps(doc).encode(), "search")


@_SETTINGS
@given(mutated(GOOD_PLUGIN))
def test_fuzz_plugin_documents(doc: Any) -> None:
    _check(json.dumps(doc).encode(), "resolve")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_fuzz_raw_bytes(data: bytes) -> None:
    _check(data, "search")
    _check(b'{"meta": {"api-version": "1.0"}, "plugins": [' + data + b"]}", "search")
