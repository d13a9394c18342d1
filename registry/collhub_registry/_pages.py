"""The site's HTML for people: an index page and one page per plugin, rendered at build time.

Everything a reader needs is in the HTML itself, so the pages work without JavaScript and from
any static file host; the index's script only narrows the rendered list (search, kind,
collective), and a plugin page's script only adds a copy button and, when the site was built
without ``--url``, fills in the install command's registry URL from the page's own address (and,
when built with ``--url``, replaces that address by the one it is served from, so a site served
on another host or port shows commands that work there).
All text from wheels and manifests is escaped.
"""

from __future__ import annotations

import re
from html import escape
from importlib import resources
from typing import Any

from hub.registry import PluginDoc, VersionEntry

__all__ = ["SITE_URL_PLACEHOLDER", "index_page", "plugin_page"]

#: Shown in install commands when the site's public URL is not known at build time.
SITE_URL_PLACEHOLDER = "SITE_URL"

_KIND_ORDER = {"producer": 0, "transform": 1, "consumer": 2}


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _shell_quote(word: str) -> str:
    """A word a POSIX shell reads back as itself (for the copyable install command)."""
    safe = all(c.isalnum() or c in "-_.,:/=+@%" for c in word) and word
    return word if safe else "'" + word.replace("'", "'\"'\"'") + "'"


def install_command(name: str, base_url: str | None) -> str:
    return f"collhub install {_shell_quote(name)} --registry {_shell_quote(base_url or SITE_URL_PLACEHOLDER)}"


_SLOT = re.compile(r"\{\{(\w+)\}\}")


def _fill(name: str, values: dict[str, str]) -> str:
    """The template ``name`` with every ``{{slot}}`` replaced in one pass (a value that happens to
    contain ``{{...}}`` is never substituted again)."""
    text = resources.files("collhub_registry").joinpath(name).read_text(encoding="utf-8")
    return _SLOT.sub(lambda m: values[m[1]], text)


def _components(doc: PluginDoc) -> list[Any]:
    manifest = doc.versions[doc.latest].manifest
    return sorted(manifest.components, key=lambda c: (_KIND_ORDER.get(c.kind, 9), c.name))


def _chips(doc: PluginDoc) -> str:
    plugin = doc.versions[doc.latest].manifest.plugin
    out = []
    for c in _components(doc):
        colls = f" · {_e(', '.join(c.collectives))}" if c.collectives else ""
        out.append(
            f'<span class="comp {_e(c.kind)}" title="{_e(c.summary)}">{_e(c.kind)}: '
            f"<b>{_e(plugin)}.{_e(c.name)}</b>{colls}</span>"
        )
    return "".join(out)


def index_page(docs: list[PluginDoc], base_url: str | None) -> str:
    """``index.html``: every plugin, rendered; the script filters the rendered sections."""
    sections = []
    for doc in docs:
        top = doc.versions[doc.latest]
        m = top.manifest
        comps = _components(doc)
        hay = " ".join(
            [
                doc.name,
                m.display_name or "",
                top.summary,
                *m.keywords,
                *(f"{m.plugin}.{c.name} {c.summary} {' '.join(c.collectives)}" for c in comps),
            ]
        ).lower()
        kinds = " ".join(sorted({c.kind for c in comps}))
        colls = " ".join(sorted({x for c in comps for x in c.collectives}))
        needs = f" · needs collhub {_e(top.requires_hub)}" if top.requires_hub else ""
        sections.append(
            f'<section class="plugin" data-name="{_e(doc.name)}" data-kinds="{_e(kinds)}" '
            f'data-collectives="{_e(colls)}" data-hay="{_e(hay)}">\n'
            f'  <h2><a href="plugins/{_e(doc.name)}.html">{_e(m.display_name or doc.name)}</a>'
            f'<span class="ver">{_e(doc.latest)}</span></h2>\n'
            f'  <div class="summary">{_e(top.summary)}</div>\n'
            f"  <div>{_chips(doc)}</div>\n"
            f'  <div class="meta">install: <code>{_e(install_command(doc.name, base_url))}</code>{needs}'
            f" · {_e(m.lifecycle)}</div>\n</section>"
        )
    collectives = sorted({x for d in docs for c in _components(d) for x in c.collectives})
    return _fill(
        "index.html",
        {
            "count": f"{len(docs)} plugins",
            "collective_options": "".join(f"<option>{_e(c)}</option>" for c in collectives),
            "plugins": "\n".join(sections) or '<p class="meta">no plugins yet</p>',
            "install_example": _e(install_command("NAME", base_url)),
            "placeholder": _e(base_url) if base_url is not None else SITE_URL_PLACEHOLDER,
        },
    )


def _params_cell(component: Any) -> str:
    params = getattr(component, "params", None) or []
    if not params:
        return '<span class="meta">not declared in the manifest (see <code>collhub plugins info</code>)</span>'
    rows = []
    for p in params:
        default = "required" if p.required else ("" if p.default is None else f"default {p.default}")
        rows.append(
            f'<li><code>{_e(p.name)}</code> <span class="meta">{_e(p.type)} {_e(default)}</span>'
            f"{' — ' + _e(p.description) if p.description else ''}</li>"
        )
    return f'<ul class="params">{"".join(rows)}</ul>'


def _versions_rows(doc: PluginDoc) -> str:
    rows = []
    for version, entry in sorted(doc.versions.items(), key=lambda kv: _upload(kv[1]), reverse=True):
        for f in entry.files:
            flag = ' <span class="yanked">yanked</span>' if entry.yanked else ""
            rows.append(
                f"<tr><td>{_e(version)}{flag}</td><td>{_e((f.upload_time or entry.upload_time or '')[:10])}</td>"
                f'<td><a href="../files/{_e(f.filename)}">{_e(f.filename)}</a></td><td>{f.size:,} B</td>'
                f'<td><code class="hash">{_e(f.hashes.get("sha256", ""))}</code></td>'
                f"<td>{_e(entry.requires_hub or 'any')}</td><td>{_e(entry.requires_python or 'any')}</td>"
                f"<td>{_e(entry.api_version)}</td></tr>"
            )
    return "\n".join(rows)


def _upload(entry: VersionEntry) -> str:
    return entry.upload_time or ""


def plugin_page(doc: PluginDoc, requires_dist: tuple[str, ...], base_url: str | None) -> str:
    """``plugins/<name>.html``: summary, components with params, versions, requirements, links."""
    top = doc.versions[doc.latest]
    m = top.manifest
    comp_rows = "\n".join(
        f'<tr><td><b>{_e(m.plugin)}.{_e(c.name)}</b></td><td><span class="comp {_e(c.kind)}">{_e(c.kind)}</span></td>'
        f"<td>{_e(c.summary)}</td><td>{_e(', '.join(c.collectives) or 'any')}</td>"
        f"<td>{_e(', '.join(c.inputs or c.outputs))}</td><td>{_params_cell(c)}</td></tr>"
        for c in _components(doc)
    )
    links = "".join(
        f'<li>{_e(k)}: <a href="{_e(v)}" rel="nofollow">{_e(v)}</a></li>'
        for k, v in sorted(m.urls.items())
        if v.startswith(("https://", "http://"))
    )
    reqs = [
        f"collhub {top.requires_hub}" if top.requires_hub else "collhub (any version)",
        f"Python {top.requires_python}" if top.requires_python else "Python (any version)",
        f"plugin API {top.api_version}",
    ]
    # what installing pulls in: the run-time dependencies (not collhub itself, not extras)
    reqs += [r for r in requires_dist if not r.lower().startswith("collhub") and "extra ==" not in r]
    placeholder = base_url is None
    note = (
        (
            f'<p class="meta" id="url-note">Replace {SITE_URL_PLACEHOLDER} with this site\'s address (the folder '
            "that holds <code>index.html</code>).</p>"
        )
        if placeholder
        else ""
    )
    none = '<p class="meta">none declared (the manifest\'s <code>[urls]</code> table: homepage, source)</p>'
    return _fill(
        "plugin.html",
        {
            "title": _e(m.display_name or doc.name),
            "name": _e(doc.name),
            "latest": _e(doc.latest),
            "lifecycle": _e(m.lifecycle),
            "summary": _e(top.summary),
            "keywords": _e(", ".join(m.keywords)),
            "install": _e(install_command(doc.name, base_url)),
            # the text the page's script replaces with the address it is served from: the
            # placeholder, or the build-time --url (a site copied or served elsewhere stays right)
            "placeholder": SITE_URL_PLACEHOLDER if placeholder else _e(base_url),
            "placeholder_note": note,
            "components": comp_rows,
            "versions": _versions_rows(doc),
            "requirements": "".join(f"<li>{_e(r)}</li>" for r in reqs),
            "links": f"<ul>{links}</ul>" if links else none,
        },
    )
