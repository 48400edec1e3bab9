"""Browse: web pages as Markdown windows for agents, offline-testable and replayable.

    from workbench.web import Browser, CachingFetcher, HttpFetcher, world_site, LocalSiteFetcher

    site = world_site(world)                                 # the world as a static site
    browser = Browser(LocalSiteFetcher(site))
    browser.access(site.url_for("Vel Orun"))                 # '>>>> Page 1/1 >>>>\\n# Vel Orun ...'
    browser.find_in_page(site.url_for("Vel Orun"), "directed by")

    live = CachingFetcher(HttpFetcher(), "runs/x/web.sqlite", mode="record")   # later mode="replay"

The tools `access(url, page=1)` and `find_in_page(url, query)` run on the host through the gateway
(`workbench.tools.web.web_tools`); the kernel keeps its no-network profile.
"""

from workbench.web.browse import Browser, access, find_in_page, open_page, page_from_result
from workbench.web.extract import extract, has_trafilatura
from workbench.web.fetch import CachingFetcher, Fetcher, FetchResult, HttpFetcher, LocalSiteFetcher, normalize_url
from workbench.web.page import Link, Page, find, windows
from workbench.web.pages import PageStore, write_pages_jsonl

_LAZY = {
    "WorldSite": "workbench.web.site",
    "world_site": "workbench.web.site",
    "browsing_solver": "workbench.web.solver",
}  # they import worlds / policies: higher layers


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'workbench.web' has no attribute {name!r}")


__all__ = [
    "Browser",
    "CachingFetcher",
    "FetchResult",
    "Fetcher",
    "HttpFetcher",
    "Link",
    "LocalSiteFetcher",
    "Page",
    "PageStore",
    "WorldSite",
    "access",
    "browsing_solver",
    "extract",
    "find",
    "find_in_page",
    "has_trafilatura",
    "normalize_url",
    "open_page",
    "page_from_result",
    "windows",
    "world_site",
    "write_pages_jsonl",
]
