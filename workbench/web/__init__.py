"""Browse: web pages as Markdown windows for agents, offline-testable and replayable.

    from workbench.web import Browser, CachingFetcher, HttpFetcher, LocalSiteFetcher
    from workbench.worlds.site import world_site

    site = world_site(world)                                 # the world as a static site
    browser = Browser(LocalSiteFetcher(site))
    browser.access(site.url_for("Vel Orun"))                 # '>>>> Page 1/1 >>>>\\n# Vel Orun ...'
    browser.find_in_page(site.url_for("Vel Orun"), "directed by")

    live = CachingFetcher(HttpFetcher(), "runs/x/web.sqlite", mode="record")   # later mode="replay"

The tools `access(url, page=1)` and `find_in_page(url, query)` run on the host through the gateway
(`workbench.tools.web.web_tools`); the kernel keeps its no-network profile. This package sits below
`workbench.tools`: what builds on it lives higher up (a world as a site, `workbench.worlds.site`; the
browsing solver, `workbench.worlds.scripted.browsing`; the ASearcher preset, `workbench.agent.asearcher`).
"""

from workbench.web.browse import Browser, access, find_in_page, open_page
from workbench.web.extract import extract, has_trafilatura
from workbench.web.fetch import CachingFetcher, Fetcher, HttpFetcher, LocalSiteFetcher, normalize_url
from workbench.web.page import Page, find, windows
from workbench.web.pages import PageStore, write_pages_jsonl

__all__ = [
    "Browser",
    "CachingFetcher",
    "Fetcher",
    "HttpFetcher",
    "LocalSiteFetcher",
    "Page",
    "PageStore",
    "access",
    "extract",
    "find",
    "find_in_page",
    "has_trafilatura",
    "normalize_url",
    "open_page",
    "windows",
    "write_pages_jsonl",
]
