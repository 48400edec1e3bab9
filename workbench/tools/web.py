"""Browse tools for the gateway: `access(url, page=1)`, `find_in_page(url, query)`, and a `search`
whose hits show their page URL (`Doc 1 (Title: t) (URL: u) text`), so a hit can be followed.

    registry = ToolRegistry(web_tools(LocalSiteFetcher(site), retriever=bm25))
    registry = ToolRegistry(web_tools(CachingFetcher(HttpFetcher(), "runs/x/web.sqlite")))

The tools run on the host; the kernel keeps its no-network profile even for the live web.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, ToolError
from workbench.passages import split_contents
from workbench.tools.builtins import SearchBackend, bind_task
from workbench.tools.registry import Tool, make_tool
from workbench.web.browse import Browser
from workbench.web.fetch import Fetcher

if TYPE_CHECKING:
    from workbench.trajectory import Task


def _field(hit: Any, name: str) -> Any:
    if isinstance(hit, dict):
        return hit.get(name)
    value = getattr(hit, name, None)
    if value is None and isinstance(getattr(hit, "document", None), dict):
        value = hit.document.get(name)
    return value


def format_web_hits(hits: list[Any], text_chars: int = 300) -> str:
    """`Doc i (Title: t) (URL: u) text` lines; the URL part only when the hit has one."""
    lines = []
    for i, hit in enumerate(hits, 1):
        if isinstance(hit, dict) and isinstance(hit.get("document"), dict):  # Search-R1 server
            hit = hit["document"]
        title, text, url = _field(hit, "title"), _field(hit, "text"), _field(hit, "url")
        if text is None and _field(hit, "contents") is not None:
            head, text = split_contents(str(_field(hit, "contents")))
            title = title or head
        text = (text or "").strip()
        if len(text) > text_chars:
            text = text[:text_chars].rstrip() + " …"
        where = f" (URL: {url})" if url else ""
        lines.append(f"Doc {i} (Title: {title or ''}){where} {text}")
    return "\n".join(lines) if lines else "No results."


def web_search_tool(
    retriever: SearchBackend, *, top_k: int = 5, max_top_k: int = 10, task: Task | None = None, name: str = "search"
) -> Tool:
    """`search(query, top_k=5)` over `retriever` (sync `retrieve` or `search`), hits with URLs."""
    retriever = bind_task(retriever, task)
    retrieve = getattr(retriever, "retrieve", None)
    batched = callable(retrieve)
    method = retrieve if batched else getattr(retriever, "search", None)
    if not callable(method) or inspect.iscoroutinefunction(method):
        raise ConfigError(
            f"{type(retriever).__name__}: web_search_tool needs a sync retrieve(queries, top_k) or search(query, top_k)"
        )

    def search(query: str, top_k: int = top_k) -> str:
        if not query.strip():
            raise ToolError("search() needs a non-empty query")
        if not 1 <= top_k <= max_top_k:
            raise ToolError(f"search() top_k must be between 1 and {max_top_k}, got {top_k}")
        result = method([query], top_k) if batched else method(query, top_k)
        return format_web_hits(list(result[0]) if batched else list(result))

    search.__doc__ = (
        "Search the collection. Returns lines 'Doc i (Title: ...) (URL: ...) text'; "
        "open a result's page with access(url)."
    )
    return make_tool(search, name=name)


def browse_tools(browser: Browser) -> list[Tool]:
    """`access` and `find_in_page` over one `Browser`."""

    def access(url: str, page: int = 1) -> str:
        return browser.access(url, page)

    def find_in_page(url: str, query: str) -> str:
        return browser.find_in_page(url, query)

    access.__doc__ = (
        f"Open the web page at url and return window `page` of it as Markdown "
        f"(windows of {browser.window_chars} characters headed '>>>> Page i/n >>>>', "
        "then the links in that window). Read page=2, 3 ... for the rest."
    )
    find_in_page.__doc__ = (
        "Return the passages of the page at url that contain query (with "
        f"{browser.context_chars} characters of context each): extract an exact "
        "fact without reading the whole page."
    )
    return [make_tool(access), make_tool(find_in_page)]


def web_tools(
    fetcher: Fetcher,
    *,
    retriever: SearchBackend | None = None,
    task: Task | None = None,
    search_top_k: int = 5,
    **browser_options: Any,
) -> list[Tool]:
    """access + find_in_page over `fetcher` (a `Browser` with `browser_options`), plus `search`
    with URLs when a retriever is given."""
    tools = browse_tools(Browser(fetcher, **browser_options))
    if retriever is not None:
        tools.insert(0, web_search_tool(retriever, top_k=search_top_k, task=task))
    return tools


__all__ = ["browse_tools", "format_web_hits", "web_search_tool", "web_tools"]
