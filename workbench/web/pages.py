"""Pages by URL for ASearcher's local `POST /access {"urls": [...]}` → `{"result": [row | null]}`.

    pages = PageStore.from_jsonl("pages.jsonl")             # rows {"url", "contents" | "title"+"text", ...}
    pages = PageStore.from_fetcher(LocalSiteFetcher(site))  # a world site, extracted on demand
    pages.get("https://world0.wiki.test/wiki/Vel_Orun")     # {"url", "title", "contents"} or None
    write_pages_jsonl(site, "pages.jsonl")                  # a world's pages for `serve-search --pages`

`workbench serve-search --pages pages.jsonl` (and `create_app(..., pages=store)`) add the route.
"""

# (No `from __future__ import annotations`: FastAPI must see the real request class of the route.)

import asyncio
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, ToolError
from workbench.safetext import safe_json
from workbench.web.browse import open_page
from workbench.web.extract import Extractor
from workbench.web.fetch import Fetcher, normalize_url

if TYPE_CHECKING:
    from fastapi import FastAPI

MAX_URLS = 256
MAX_URL_CHARS = 4096


def _key(url: str) -> str | None:
    try:
        return normalize_url(url)
    except ToolError:
        return None


class PageStore:
    """Page rows by URL: from a JSONL file, a dict, or a fetcher (extracted when asked)."""

    def __init__(
        self,
        rows: dict[str, dict[str, Any]] | None = None,
        *,
        lookup: Callable[[str], dict[str, Any] | None] | None = None,
    ) -> None:
        self._rows = {k: v for u, v in (rows or {}).items() if (k := _key(u)) is not None}
        self._lookup = lookup

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "PageStore":
        p = Path(path)
        if not p.is_file():
            raise ConfigError(
                f"{p}: no such pages file; write one with write_pages_jsonl(site, path) "
                "or pass JSONL rows that each have a 'url'"
            )
        rows: dict[str, dict[str, Any]] = {}
        with p.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{p}:{lineno}: invalid JSON ({exc.msg})") from None
                if not isinstance(row, dict) or not isinstance(row.get("url"), str):
                    raise ConfigError(f"{p}:{lineno}: a page row is a JSON object with a 'url' string")
                rows[row["url"]] = row
        return cls(rows)

    @classmethod
    def from_fetcher(cls, fetcher: Fetcher, extractor: Extractor = "auto") -> "PageStore":
        def lookup(url: str) -> dict[str, Any] | None:
            try:
                page = open_page(fetcher, url, extractor)
            except ToolError:
                return None
            return {"url": page.url, "title": page.title, "contents": page.markdown}

        return cls(lookup=lookup)

    def get(self, url: str) -> dict[str, Any] | None:
        key = _key(url) if isinstance(url, str) else None
        if key is None:
            return None
        if key in self._rows:
            return self._rows[key]
        return self._lookup(key) if self._lookup is not None else None

    def __len__(self) -> int:
        return len(self._rows)


def write_pages_jsonl(
    site: Any, path: str | Path, urls: Iterable[str] | None = None, extractor: Extractor = "auto"
) -> Path:
    """Extract a site's pages (all, or `urls`) into a pages JSONL for `serve-search --pages`."""
    from workbench.web.fetch import LocalSiteFetcher

    store = PageStore.from_fetcher(LocalSiteFetcher(site), extractor)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for url in urls if urls is not None else site.pages:
            row = store.get(url)
            if row is not None:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


def add_access_route(app: "FastAPI", pages: PageStore) -> None:
    """Add ASearcher's `POST /access` to a FastAPI app (the search server's)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    from workbench.webio import BadRequest, parse_json

    def check(raw: bytes) -> list[str]:
        body = parse_json(raw)
        urls = body.get("urls") if isinstance(body, dict) else None
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise BadRequest('send {"urls": ["https://...", ...]}: a list of URL strings', 422)
        if len(urls) > MAX_URLS:
            raise BadRequest(f"{len(urls)} urls in one request; the limit is {MAX_URLS}: split it", 422)
        for i, u in enumerate(urls):
            if len(u) > MAX_URL_CHARS:
                raise BadRequest(f"url {i} has {len(u)} characters; the limit is {MAX_URL_CHARS}", 422)
        return urls

    @app.post("/access")
    async def access(request: Request) -> Any:
        try:
            urls = check(await request.body())
        except BadRequest as exc:
            return JSONResponse(status_code=exc.status, content={"detail": str(exc)})
        rows = await asyncio.to_thread(lambda: [pages.get(u) for u in urls])
        return {"result": [None if r is None else safe_json(r) for r in rows]}
