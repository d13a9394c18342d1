"""Is a distribution installed in editable (development) mode here? (PEP 610 ``direct_url.json``)

``collhub install`` asks before it replaces such an install with a wheel from the registry: pip
would silently turn a checkout someone is working in into a frozen copy.
"""

from __future__ import annotations

import json
from importlib import metadata
from urllib.parse import unquote, urlsplit

__all__ = ["editable_location"]


def editable_location(name: str) -> str | None:
    """The source directory of ``name``'s editable install in this environment, else None."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    try:
        text = dist.read_text("direct_url.json")
        info = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("dir_info"), dict):
        return None
    if info["dir_info"].get("editable") is not True:
        return None
    url = info.get("url")
    if not isinstance(url, str):
        return "?"
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" else url
