"""Reading pages: `open_page` (fetch + checks + extract) and the `Browser` behind the tools.

    browser = Browser(fetcher, window_chars=6000)
    browser.access(url)            # '>>>> Page 1/3 >>>>\\n# Title ...\\n\\nLinks: ...'
    browser.access(url, page=2)
    browser.find_in_page(url, "director")   # passages around each match

Every failure (HTTP error, non-HTML, oversize, timeout, refused address, bad page number) is a
`ToolError` whose message the model sees as the tool's output.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TypedDict, Unpack

from workbench.errors import ConfigError, ToolError
from workbench.safetext import safe_text
from workbench.web.extract import Extractor, extract
from workbench.web.fetch import Fetcher, FetchResult
from workbench.web.page import Page, find, windows

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown"})


def _decode(result: FetchResult) -> str:
    charset = "utf-8"
    for part in result.content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    try:
        return safe_text(result.body.decode(charset, errors="replace"))
    except LookupError:
        return safe_text(result.body.decode("utf-8", errors="replace"))


def page_from_result(result: FetchResult, extractor: Extractor = "auto") -> Page:
    """The `Page` of a fetch; ToolError for an HTTP error status or a body that is not a page."""
    if result.status >= 400 or result.status < 200:
        hint = (
            "the page does not exist; check the address or search for another page"
            if result.status in (404, 410)
            else "the site refused or failed; try another source"
        )
        raise ToolError(f"cannot open {result.url}: HTTP {result.status} ({hint})")
    ctype = result.content_type.split(";")[0].strip().lower()
    if ctype in TEXT_TYPES:
        text = _decode(result).strip()
        return Page(result.final_url, result.final_url, text, ())
    if ctype not in HTML_TYPES:
        raise ToolError(
            f"cannot open {result.url}: it is {ctype or 'of unknown type'}, not an "
            "HTML page; access reads web pages only"
        )
    return extract(_decode(result), result.final_url, extractor)


def open_page(fetcher: Fetcher, url: str, extractor: Extractor = "auto") -> Page:
    """Fetch `url` and extract it as a `Page` (ToolError on any failure)."""
    return page_from_result(fetcher.fetch(url), extractor)


class BrowserOptions(TypedDict, total=False):
    """`Browser`'s keyword options, for the one-off `access` and `find_in_page`."""

    window_chars: int
    max_windows: int
    max_page_chars: int
    max_links: int
    context_chars: int
    max_matches: int
    extractor: Extractor
    cache_pages: int


class Browser:
    """access / find_in_page over one fetcher, with a small LRU of extracted pages."""

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        window_chars: int = 6000,
        max_windows: int = 10,
        max_page_chars: int = 250_000,
        max_links: int = 20,
        context_chars: int = 300,
        max_matches: int = 10,
        extractor: Extractor = "auto",
        cache_pages: int = 32,
    ) -> None:
        if window_chars < 100 or max_windows < 1 or max_page_chars < window_chars:
            raise ConfigError("Browser needs window_chars >= 100, max_windows >= 1 and max_page_chars >= window_chars")
        self.fetcher, self.extractor = fetcher, extractor
        self.window_chars, self.max_windows = window_chars, max_windows
        self.max_page_chars, self.max_links = max_page_chars, max_links
        self.context_chars, self.max_matches = context_chars, max_matches
        self._cache: OrderedDict[str, Page] = OrderedDict()
        self._cache_size = cache_pages
        self._lock = threading.Lock()

    def open(self, url: str) -> Page:
        with self._lock:
            if url in self._cache:
                self._cache.move_to_end(url)
                return self._cache[url]
        page = open_page(self.fetcher, url, self.extractor)
        if len(page.markdown) > self.max_page_chars:
            page = Page(page.url, page.title, page.markdown[: self.max_page_chars], page.links)
        with self._lock:
            self._cache[url] = page
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return page

    def access(self, url: str, page: int = 1) -> str:
        """Window `page` (1-based) of the page at `url`, then the links in that window."""
        if isinstance(page, bool) or not isinstance(page, int):
            raise ToolError(f"page must be a whole number like 1 or 2, got {page!r}")
        doc = self.open(url)
        wins = windows(doc, self.window_chars)[: self.max_windows]
        if not 1 <= page <= len(wins):
            raise ToolError(
                f"page {page} is out of range: {url} has {len(wins)} page"
                f"{'s' if len(wins) != 1 else ''} (use page=1..{len(wins)})"
            )
        text = wins[page - 1]
        links = [link for link in doc.links if f"]({link.url})" in text][: self.max_links]
        if links:
            text += "\n\nLinks:\n" + "\n".join(f"- {link.text}: {link.url}" for link in links)
        if page < len(wins):
            text += f"\n\n(more: access({url!r}, page={page + 1}))"
        return text

    def find_in_page(self, url: str, query: str) -> str:
        """The passages of the page at `url` around each match of `query`."""
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be a non-empty string, e.g. find_in_page(url, 'born in')")
        doc = self.open(url)
        found = find(doc, query, self.context_chars)
        if not found:
            return (
                f"No match for {query!r} in {doc.url} ({len(doc.markdown)} characters); try "
                "fewer or other words, or read it with access(url)"
            )
        shown = found[: self.max_matches]
        head = f"{len(found)} match{'es' if len(found) != 1 else ''} for {query!r} in {doc.url}"
        if len(found) > len(shown):
            head += f" (first {len(shown)})"
        return head + ":\n" + "\n\n".join(f"[{i}] {p}" for i, p in enumerate(shown, 1))


def access(fetcher: Fetcher, url: str, page: int = 1, **options: Unpack[BrowserOptions]) -> str:
    """One-off `Browser(fetcher, **options).access(url, page)`."""
    return Browser(fetcher, **options).access(url, page)


def find_in_page(fetcher: Fetcher, url: str, query: str, **options: Unpack[BrowserOptions]) -> str:
    """One-off `Browser(fetcher, **options).find_in_page(url, query)`."""
    return Browser(fetcher, **options).find_in_page(url, query)
