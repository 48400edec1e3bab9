"""What synthesis knows about pages: their infobox facts, sentences, links, and who links to them.

Everything is read through `workbench.web.open_page(fetcher, url)`, so the same code runs on the
local world site, a served copy, a recorded cache or the live web.

    graph = PageGraph(LocalSiteFetcher(world_site(world)))
    graph.crawl(list(site.pages))          # in-links (who points at whom), titles → urls
    info = graph.info(url)                 # PageInfo(url, title, kind, facts, sentences)
    graph.resolve(tree)                    # every entity url / literal the description fits

A fact is an infobox row (`| Director | [Tamira Kolvesh](url) |`): key "director", value the cell
text, value_url the link when the cell is one. The `Type` row names the page's kind.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.errors import ToolError
from workbench.synth.qa import Desc, Ref, Span, Value

if TYPE_CHECKING:
    from workbench.web.page import Page

_ROW = re.compile(r"^\|\s*(.*?)\s*\|\s*(.*?)\s*\|\s*$")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def norm(text: str) -> str:
    """Lower case, single spaces, no punctuation at the ends: how names and sentences compare."""
    return " ".join(re.sub(r"[^\w\s-]", " ", text.lower()).split())


@dataclass(frozen=True)
class Fact:
    subject_url: str
    subject: str
    key: str
    value: str
    value_url: str = ""


@dataclass
class PageInfo:
    url: str
    title: str
    kind: str = ""
    facts: list[Fact] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)

    def values(self, key: str) -> list[Fact]:
        return [f for f in self.facts if f.key == key]

    def sentence_for(self, *needles: str) -> str:
        """The first sentence holding every needle (case-insensitively); else the infobox row."""
        low = [n.lower() for n in needles if n]
        for s in self.sentences:
            if all(n in s.lower() for n in low):
                return s
        return ""


def parse_page(url: str, title: str, markdown: str) -> PageInfo:
    """Facts (infobox rows) and sentences (prose, plus one `Key: value.` line per row) of a page."""
    info = PageInfo(url, title)
    prose: list[str] = []
    for line in markdown.splitlines():
        m = _ROW.match(line)
        if m:
            key, cell = m.group(1), m.group(2)
            if not cell or set(key) <= set("-: ") or key == title:
                continue
            link = _LINK.fullmatch(cell)
            value, value_url = (link.group(1), link.group(2)) if link else (_LINK.sub(r"\1", cell), "")
            if key.lower() == "type":
                info.kind = value.lower()
                continue
            info.facts.append(Fact(url, title, key.lower(), value.strip(), value_url))
            info.sentences.append(f"{key}: {value.strip()}.")
        elif line.strip() and not line.lstrip().startswith(("#", "|", "-", "*")):
            prose.append(_LINK.sub(r"\1", line.strip()))
    for para in prose:
        info.sentences.extend(s.strip() for s in _SENTENCE.split(para) if s.strip())
    return info


class PageGraph:
    """Pages, their facts and the reverse links among them (thread-safe; tools call from threads)."""

    def __init__(self, fetcher: Any, *, max_pages: int = 20_000) -> None:
        self.fetcher = fetcher
        self.max_pages = max_pages
        self._info: dict[str, PageInfo] = {}
        self._in: dict[str, list[Fact]] = defaultdict(list)
        self._by_title: dict[str, str] = {}
        self._lock = threading.RLock()
        self.fetches = 0

    # -- reading ---------------------------------------------------------------------------------
    def page(self, url: str) -> Page:
        from workbench.web import open_page

        self.fetches += 1
        return open_page(self.fetcher, url)

    def info(self, url: str) -> PageInfo:
        """The parsed page (fetched once); a ToolError when it cannot be opened."""
        with self._lock:
            if url in self._info:
                return self._info[url]
        page = self.page(url)
        info = parse_page(page.url, page.title, page.markdown)
        with self._lock:
            self._add(url, info)
            if page.url != url:
                self._add(page.url, info)
        return info

    def _add(self, url: str, info: PageInfo) -> None:
        if url in self._info:
            return
        self._info[url] = info
        if info.title:
            self._by_title.setdefault(norm(info.title), url)
        for f in info.facts:
            if f.value_url:
                self._in[f.value_url].append(f)

    def crawl(self, start: Iterable[str], limit: int | None = None) -> int:
        """Breadth-first over page links from `start` (e.g. every url of a site, as ASearcher's pages
        table); returns how many pages are known after it."""
        limit = limit or self.max_pages
        queue, seen = deque(start), set()
        while queue and len(self._info) < limit:
            url = queue.popleft()
            if url in seen:
                continue
            seen.add(url)
            try:
                page = self.page(url)
            except ToolError:
                continue
            info = parse_page(page.url, page.title, page.markdown)
            with self._lock:
                self._add(url, info)
            found = [link.url for link in page.links] + [m.group(2) for m in _LINK.finditer(page.markdown)]
            queue.extend(u for u in found if u not in seen)
        return len(self._info)

    @property
    def urls(self) -> list[str]:
        """Known pages that have facts (entity pages), in crawl order."""
        with self._lock:
            return [u for u, i in self._info.items() if i.facts and u == i.url]

    def in_links(self, url: str) -> list[Fact]:
        """Facts on known pages whose value links to `url`."""
        with self._lock:
            return list(self._in.get(url, ()))

    def url_of(self, name: str) -> str | None:
        with self._lock:
            return self._by_title.get(norm(name))

    # -- meaning of a description ----------------------------------------------------------------
    def resolve(self, value: Value) -> set[str]:
        """Entity urls (or literal values, normalised) the description fits, by the known pages."""
        if isinstance(value, Ref):
            return {value.url or self.url_of(value.name) or norm(value.name)}
        if isinstance(value, str):
            return {self.url_of(value) or norm(value)}
        if isinstance(value, Span):
            return set()
        if value.of_key:
            out: set[str] = set()
            for s in self.resolve(value.subject):
                if s.startswith(("http://", "https://")):
                    out |= {f.value_url or norm(f.value) for f in self._safe_info(s).values(value.of_key)}
            return out
        return {u for u in self._candidates(value) if self.fits(u, value)}

    def _candidates(self, desc: Desc) -> set[str]:
        for clue in desc.clues:
            if isinstance(clue.value, Span):
                continue
            targets = self.resolve(clue.value)
            if any(t.startswith(("http://", "https://")) for t in targets):
                return {f.subject_url for t in targets for f in self.in_links(t) if f.key == clue.key}
        return set(self.urls)

    def fits(self, url: str, desc: Desc) -> bool:
        """Does the page at `url` satisfy every clue of `desc` (and its kind)?"""
        info = self._safe_info(url)
        if desc.kind and info.kind and info.kind != desc.kind:
            return False
        for clue in desc.clues:
            facts = info.values(clue.key)
            if isinstance(clue.value, Span):
                ok = any(clue.value.contains(f.value) for f in facts)
            else:
                targets = self.resolve(clue.value)
                ok = any((f.value_url or norm(f.value)) in targets or norm(f.value) in targets for f in facts)
            if not ok:
                return False
        return True

    def _safe_info(self, url: str) -> PageInfo:
        try:
            return self.info(url)
        except ToolError:
            return PageInfo(url, "")

    def label(self, target: str) -> str:
        """A resolved url's page title, or the literal itself."""
        if target.startswith(("http://", "https://")):
            return self._safe_info(target).title or target
        return target


__all__ = ["Fact", "PageGraph", "PageInfo", "norm", "parse_page"]
