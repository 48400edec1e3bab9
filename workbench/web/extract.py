"""HTML → `Page` (Markdown + links). Two extractors, the same contract:

    extract(html, url)                       # "auto": trafilatura if installed, else the fallback
    extract(html, url, extractor="fallback") # stdlib html.parser, no dependency

Both keep the title, headings, paragraphs, lists, tables and links (made absolute) and drop
navigation, headers/footers, forms, scripts and styles (trafilatura also drops link lists such as
"See also"). Where trafilatura finds no content (a bare fragment), the fallback reads the page.
Install trafilatura with the `[web]` extra.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Literal
from urllib.parse import urljoin, urlsplit

from workbench.errors import ConfigError
from workbench.safetext import safe_text
from workbench.web.page import Link, Page

if TYPE_CHECKING:
    from configparser import ConfigParser

Extractor = Literal["auto", "fallback", "trafilatura"]

_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "nav",
        "footer",
        "form",
        "iframe",
        "button",
        "select",
        "textarea",
        "canvas",
        "object",
        "aside",
    }
)
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menu", "menubar"})
_DROP_CLASS = re.compile(
    r"(?:^|[\s_-])(nav|navbar|navigation|menu|footer|sidebar|cookie|"
    r"breadcrumbs?|banner|masthead|skip|share|social|advert|ads)(?:$|[\s_-])",
    re.IGNORECASE,
)
_VOID = frozenset(
    {"br", "img", "hr", "meta", "link", "input", "source", "wbr", "col", "area", "base", "embed", "param", "track"}
)
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "blockquote",
        "dd",
        "dt",
        "dl",
        "figure",
        "figcaption",
        "ul",
        "ol",
        "li",
        "pre",
        "address",
        "caption",
        "details",
        "summary",
        "header",
        "body",
    }
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_WS = re.compile(r"[ \t\r\n\f\v]+")


def has_trafilatura() -> bool:
    """Whether trafilatura (the `web` extra) is installed; without it HTML goes through the stdlib extractor."""
    try:
        import trafilatura  # noqa: F401
    except ImportError:
        return False
    return True


def extract(html: str, url: str, extractor: Extractor = "auto") -> Page:
    """The page at `url` whose HTML is `html`, as Markdown with absolute links."""
    if extractor not in ("auto", "fallback", "trafilatura"):
        raise ConfigError(f"extractor={extractor!r}: use 'auto', 'fallback' or 'trafilatura'")
    html = safe_text(html)
    if extractor == "trafilatura" or (extractor == "auto" and has_trafilatura()):
        if not has_trafilatura():
            raise ConfigError(
                "extractor='trafilatura' needs the package: pip install 'workbench[web]' (or use extractor='fallback')"
            )
        return _trafilatura(html, url)
    return _fallback(html, url)


# -- fallback ----------------------------------------------------------------------------------
def _absolute(base: str, href: str) -> str | None:
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    target = urljoin(base, href)
    if urlsplit(target).scheme not in ("http", "https"):
        return None  # javascript:, mailto:, data: …
    return target.split("#", 1)[0]


class _Converter(HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.blocks: list[str] = []
        self.buf: list[str] = []  # inline text of the current block (or table cell)
        self.stack: list[tuple[str, bool]] = []  # open tags and whether each drops its content
        self.skip = 0
        self.title: list[str] = []
        self.in_title = False
        self.h1: str | None = None
        self.heading = 0
        self.lists: list[list[int]] = []  # per open list: [is_ordered, counter]
        self.anchors: list[tuple[int, str | None]] = []
        self.links: dict[str, str] = {}
        self.rows: list[list[str]] | None = None  # the open table's rows
        self.table_depth = 0
        self.cell: list[str] | None = None
        self.pre = 0
        self.main_depth = 0

    # inline sink: the open table cell, else the block buffer
    def _sink(self) -> list[str]:
        return self.cell if self.cell is not None else self.buf

    def _drops(self, tag: str, attrs: dict[str, str | None]) -> bool:
        if tag in _DROP_TAGS or (attrs.get("role") or "").lower() in _DROP_ROLES:
            return True
        if tag == "header" and self.main_depth == 0:
            return True
        if "hidden" in attrs or (attrs.get("aria-hidden") or "").lower() == "true":
            return True
        marks = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
        return bool(_DROP_CLASS.search(marks)) and tag not in ("body", "html", "main", "article")

    def _flush(self, prefix: str = "") -> None:
        text = "".join(self.buf)
        self.buf = []
        if self.pre:
            text = text.strip("\n")
        else:
            text = "\n".join(_WS.sub(" ", line).strip() for line in text.split("\n"))
            text = re.sub(r"\n{2,}", "\n", text).strip()
        if text:
            self.blocks.append(prefix + text)

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        attrs = dict(attrs_list)
        if tag in _VOID:
            if not self.skip and tag == "br":
                self._sink().append("\n")
            return
        dropped = self.skip > 0 or self._drops(tag, attrs)
        self.stack.append((tag, dropped))
        if dropped:
            self.skip += 1
            return
        if tag == "title":
            self.in_title = True
        elif tag in ("main", "article"):
            self.main_depth += 1
        if tag in _HEADINGS:
            self._flush()
            self.heading = _HEADINGS[tag]
        elif tag == "table":
            self.table_depth += 1
            if self.table_depth == 1:
                self._flush()
                self.rows = []
        elif tag == "tr" and self.rows is not None and self.table_depth == 1:
            self.rows.append([])
        elif tag in ("td", "th") and self.rows is not None and self.table_depth == 1:
            if not self.rows:
                self.rows.append([])
            self.cell = []
        elif tag == "a":
            self.anchors.append((len(self._sink()), _absolute(self.base, attrs.get("href") or "")))
        elif tag in ("ul", "ol"):
            self._flush()
            self.lists.append([tag == "ol", 0])
        elif tag == "pre":
            self._flush()
            self.pre += 1
        elif tag in _BLOCKS and self.cell is None:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            open_tag, dropped = self.stack.pop()
            if dropped:
                self.skip -= 1
            else:
                self._close(open_tag)
            if open_tag == tag:
                break

    def _close(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag in ("main", "article"):
            self.main_depth -= 1
        if tag in _HEADINGS:
            text = _WS.sub(" ", "".join(self.buf)).strip()
            if tag == "h1" and self.h1 is None and text:
                self.h1 = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            self._flush("#" * self.heading + " ")
            self.heading = 0
        elif tag in ("td", "th") and self.cell is not None and self.rows is not None:
            text = _WS.sub(" ", "".join(self.cell)).strip().replace("|", "\\|")
            self.rows[-1].append(text)
            self.cell = None
        elif tag == "table":
            self.table_depth -= 1
            if self.table_depth == 0 and self.rows is not None:
                self._emit_table(self.rows)
                self.rows = None
        elif tag == "a" and self.anchors:
            start, href = self.anchors.pop()
            sink = self._sink()
            text = _WS.sub(" ", "".join(sink[start:])).strip()
            if href and text:
                del sink[start:]
                sink.append(f"[{text}]({href})")
                self.links.setdefault(href, text)
        elif tag == "li":
            if self.lists:
                self.lists[-1][1] += 1
                ordered, n = self.lists[-1]
                indent = "  " * (len(self.lists) - 1)
                self._flush(f"{indent}{n}. " if ordered else f"{indent}- ")
            else:
                self._flush("- ")
        elif tag in ("ul", "ol"):
            self._flush()
            if self.lists:
                self.lists.pop()
        elif tag == "pre":
            text = "".join(self.buf).strip("\n")
            self.buf = []
            if text.strip():
                self.blocks.append(f"```\n{text}\n```")
            self.pre -= 1
        elif tag == "blockquote":
            self._flush("> ")
        elif tag in _BLOCKS and self.cell is None:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.in_title:
            self.title.append(data)
            return
        self._sink().append(data)

    def _emit_table(self, rows: list[list[str]]) -> None:
        rows = [r for r in rows if any(c for c in r)]
        if not rows:
            return
        width = max(len(r) for r in rows)
        lines = []
        for i, row in enumerate(rows):
            cells = row + [""] * (width - len(row))
            lines.append("| " + " | ".join(cells) + " |")
            if i == 0:
                lines.append("|" + " --- |" * width)
        self.blocks.append("\n".join(lines))

    def page(self, url: str) -> Page:
        self._flush()
        title = _WS.sub(" ", "".join(self.title)).strip()
        title = self.h1 or title
        blocks = self.blocks
        if title and not (blocks and blocks[0].startswith("# ")):
            blocks = [f"# {title}", *blocks]
        links = tuple(Link(u, t) for u, t in self.links.items())
        return Page(url, title, "\n\n".join(blocks), links)


def _fallback(html: str, url: str) -> Page:
    conv = _Converter(url)
    conv.feed(html)
    conv.close()
    return conv.page(url)


# -- trafilatura -------------------------------------------------------------------------------
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)\)")


@lru_cache(maxsize=1)
def _trafilatura_config() -> ConfigParser:
    from trafilatura.settings import use_config

    config = use_config()
    # short pages (an entity page, a stub) are content too: without these trafilatura falls back
    # to its flat "baseline" text and loses tables and links
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "10")
    config.set("DEFAULT", "MIN_OUTPUT_SIZE", "1")
    return config


def _trafilatura(html: str, url: str) -> Page:
    import trafilatura

    md = (
        trafilatura.extract(
            html,
            url=url,
            output_format="markdown",
            include_links=True,
            include_tables=True,
            include_formatting=False,
            with_metadata=False,
            favor_recall=True,
            fast=True,
            config=_trafilatura_config(),
        )
        or ""
    )
    if not md.strip():  # a fragment or a page it finds no content in: the fallback reads it all
        return _fallback(html, url)
    head = _Converter(url)
    head.feed(html)
    head.close()
    title = head.h1 or _WS.sub(" ", "".join(head.title)).strip()
    links: dict[str, str] = {}

    def absolute(m: re.Match[str]) -> str:
        target = _absolute(url, m.group(2))
        if target is None:
            return m.group(1)
        links.setdefault(target, m.group(1).strip())
        return f"[{m.group(1)}]({target})"

    md = _MD_LINK.sub(absolute, md).strip()
    if title and not md.startswith("# "):
        md = f"# {title}\n\n{md}"
    return Page(url, title, md, tuple(Link(u, t) for u, t in links.items()))
