"""A synthetic world as a static web site: one page per entity, plus an index.

    site = world_site(world)
    url = site.url_for("Vel Orun")          # "https://world0.wiki.test/wiki/Vel_Orun" (= corpus url)
    site.pages[url]                         # HTML: infobox of relations as links, passage, "See also",
                                            # and the navigation/footer/script boilerplate of a real site
    site.entity_at(url)                     # the Entity
    with site.serve() as base_url:          # "http://127.0.0.1:PORT", same paths
        fetcher = site.http_fetcher(base_url)   # fetches the public URLs from the served copy

Pages render on demand (a 100k-entity world does not sit in memory as HTML).
"""

from __future__ import annotations

import contextlib
import html
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from workbench.errors import ToolError
from workbench.web.fetch import HttpFetcher, normalize_url
from workbench.worlds.schema import Entity, render_passage
from workbench.worlds.world import World

_INVERSE = {  # relation -> heading on the object's page for the subjects pointing at it
    "directed_by": "Films directed",
    "founded_by": "Organisations founded",
    "headquartered_in": "Organisations based here",
    "born_in": "People born here",
    "located_in": "Cities",
    "capital": "Capital of",
}
_TYPES = ("country", "city", "person", "film", "organisation")
_STYLE = (
    "body{font-family:sans-serif;margin:0}header,nav,footer{background:#f4f4f4;padding:8px}"
    "nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:12px}main{padding:16px}"
    ".infobox{float:right;border:1px solid #aaa;margin:0 0 8px 8px}.infobox th{text-align:left}"
    ".cookie-banner{position:fixed;bottom:0;background:#333;color:#fff;padding:8px}"
)
_SCRIPT = (
    "window.dataLayer=window.dataLayer||[];function track(e,p){dataLayer.push({event:e,"
    "page:p,ts:Date.now()})}document.addEventListener('DOMContentLoaded',function(){"
    "track('view',location.pathname);var b=document.querySelector('.cookie-banner');"
    "if(b&&localStorage.getItem('consent')){b.remove()}});"
)


class _Pages(Mapping[str, str]):
    """{url: html}, rendered when read."""

    def __init__(self, site: WorldSite) -> None:
        self._site = site

    def __getitem__(self, url: str) -> str:
        return self._site.render(url)

    def __iter__(self) -> Iterator[str]:
        yield self._site.index_url
        for e in self._site.world.entities:
            yield self._site.url_for(e.id)

    def __len__(self) -> int:
        return len(self._site.world.entities) + 1

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and (url == self._site.index_url or self._site.entity_at(url) is not None)


class WorldSite:
    """The browsable site of a `World`; URLs are `world.page_url(entity)`."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.base_url = world.site_base
        self.index_url = self.base_url + "/"
        self.pages: Mapping[str, str] = _Pages(self)
        self._by_url = {world.page_url(e.id): e.id for e in world.entities}
        self._inverse: dict[int, list[tuple[str, int]]] = {}
        for e in world.entities:
            for rel, target in e.rels.items():
                self._inverse.setdefault(target, []).append((rel, e.id))

    def url_for(self, entity: int | str) -> str:
        return self.world.page_url(entity)

    def entity_at(self, url: str) -> Entity | None:
        try:
            key = normalize_url(url)
        except Exception:
            return None
        i = self._by_url.get(key)
        return None if i is None else self.world.entities[i]

    # -- rendering ------------------------------------------------------------------------------
    def render(self, url: str) -> str:
        """The HTML at `url`; KeyError when the site has no such page."""
        if normalize_url(url) == self.index_url:
            return self._index()
        e = self.entity_at(url)
        if e is None:
            raise KeyError(url)
        return self._entity_page(e)

    def _link(self, i: int) -> str:
        e = self.world.entities[i]
        return f'<a href="{html.escape(urlsplit(self.url_for(i)).path)}">{html.escape(e.name)}</a>'

    def _chrome(self, title: str, body: str) -> str:
        w = self.world
        cats = "".join(f'<li><a href="/category/{t}">{t.title()}s</a></li>' for t in _TYPES)
        recent = "".join(f"<li>{self._link(i)}</li>" for i in range(min(12, len(w.entities))))
        return (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)} - World {w.seed} Wiki</title>"
            f'<meta name="viewport" content="width=device-width"><style>{_STYLE}</style>'
            f"<script>{_SCRIPT}</script></head><body>"
            f'<header class="site-header"><a href="/">World {w.seed} Wiki</a>'
            f'<form role="search" action="/search"><input name="q" placeholder="Search the wiki">'
            f"<button>Search</button></form></header>"
            f'<nav class="main-nav"><ul><li><a href="/">Main page</a></li>{cats}'
            f'<li><a href="/random">Random page</a></li><li><a href="/help">Help</a></li></ul>'
            f"<h3>Recently edited</h3><ul>{recent}</ul></nav>"
            f"<main><article>{body}</article></main>"
            f"<footer><p>World {w.seed} Wiki is a fictional encyclopedia generated by workbench. "
            f'Text is available under the terms of its license.</p><ul><li><a href="/about">About'
            f'</a></li><li><a href="/privacy">Privacy policy</a></li><li><a href="/terms">Terms of '
            f'use</a></li><li><a href="/contact">Contact</a></li></ul></footer>'
            f'<div class="cookie-banner">This site uses cookies to remember your preferences. '
            f"<button>Accept</button><button>Decline</button></div>"
            f'<script>track("ready","{html.escape(title)}");</script></body></html>'
        )

    def _entity_page(self, e: Entity) -> str:
        names = [x.name for x in self.world.entities]
        rows = [f'<tr><th colspan="2">{html.escape(e.name)}</th></tr>', f"<tr><th>Type</th><td>{e.type}</td></tr>"]
        for rel in self.world.relations_of(e.type):
            if rel.target is not None:
                value = self._link(e.rels[rel.name])
            else:
                value = html.escape(str(e.attrs[rel.name]))
            rows.append(f"<tr><th>{rel.phrase.capitalize()}</th><td>{value}</td></tr>")
        inverse = self._inverse.get(e.id, [])
        see_also = "".join(f"<li>{_INVERSE.get(rel, rel)}: {self._link(i)}</li>" for rel, i in inverse[:12])
        body = (
            f"<h1>{html.escape(e.name)}</h1>"
            f'<table class="infobox">{"".join(rows)}</table>'
            f"<p>{html.escape(render_passage(e, names))}</p>"
        )
        if see_also:
            body += f"<h2>See also</h2><ul>{see_also}</ul>"
        return self._chrome(e.name, body)

    def _index(self) -> str:
        parts = []
        for t in _TYPES:
            ids = [e.id for e in self.world.entities if e.type == t][:200]
            parts.append(f"<h2>{t.title()}s</h2><ul>" + "".join(f"<li>{self._link(i)}</li>" for i in ids) + "</ul>")
        return self._chrome("Main page", f"<h1>World {self.world.seed} Wiki</h1>" + "".join(parts))

    # -- serving --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def serve(self, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
        """Serve the site over HTTP in a thread; yields its base URL (`http://127.0.0.1:PORT`)."""
        server = ThreadingHTTPServer((host, port), _handler(self))
        server.daemon_threads = True
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="world-site"
        )
        thread.start()
        try:
            yield f"http://{host}:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    def http_fetcher(self, served_base: str, **kwargs: Any) -> HttpFetcher:
        """An `HttpFetcher` that reads this site's public URLs from the copy served at `served_base`."""
        netloc = urlsplit(served_base).netloc
        allow = (*kwargs.pop("allow_hosts", ()), netloc)
        return HttpFetcher(allow_hosts=allow, rewrite={self.base_url: served_base}, **kwargs)


def _handler(site: WorldSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms stall

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].split("#", 1)[0] or "/"
            try:
                body, status = site.render(site.base_url + path).encode("utf-8"), 200
            except (KeyError, ToolError):
                body, status = b"<html><body><h1>Not Found</h1></body></html>", 404
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def world_site(world: World) -> WorldSite:
    """The browsable site of `world` (one page per entity at `world.page_url(entity)`)."""
    return WorldSite(world)
