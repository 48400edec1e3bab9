"""A web page as the model reads it: Markdown, its links, and windows of it.

page = Page(url, title, markdown, links)
windows(page, 6000)     # ['>>>> Page 1/3 >>>>\\n# Title\\n...', ...]
find(page, "director")  # passages around each match
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    """An absolute link target and its anchor text."""

    url: str
    text: str


@dataclass(frozen=True)
class Page:
    """One extracted page: Markdown body (title as its first heading) and its links in order."""

    url: str
    title: str
    markdown: str
    links: tuple[Link, ...] = ()

    def windows(self, size: int = 6000) -> list[str]:
        return windows(self, size)

    def find(self, query: str, context_chars: int = 300) -> list[str]:
        return find(self, query, context_chars)


def _split(text: str, size: int) -> list[str]:
    """Chunks of at most `size` chars, cut at a blank line, else a newline, else a space."""
    chunks: list[str] = []
    while len(text) > size:
        cut = -1
        for sep in ("\n\n", "\n", " "):
            cut = text.rfind(sep, size // 2, size)
            if cut > 0:
                break
        if cut <= 0:
            cut = size
        chunks.append(text[:cut].strip("\n"))
        text = text[cut:].lstrip("\n ")
    if text.strip() or not chunks:
        chunks.append(text.strip("\n"))
    return chunks


def windows(page: Page, size: int = 6000) -> list[str]:
    """The page's Markdown in windows of at most `size` chars, each headed `>>>> Page i/n >>>>`."""
    if size < 100:
        raise ValueError(f"window size {size} is too small; use at least 100 characters")
    chunks = _split(page.markdown, size)
    n = len(chunks)
    return [f">>>> Page {i}/{n} >>>>\n{chunk}" for i, chunk in enumerate(chunks, 1)]


def find(page: Page, query: str, context_chars: int = 300) -> list[str]:
    """Passages of the page around each case-insensitive match of `query` (overlaps merged).

    A multi-word query that never occurs verbatim falls back to lines holding all its words.
    """
    text, q = page.markdown, query.strip()
    if not q:
        return []
    spans = [(m.start(), m.end()) for m in re.finditer(re.escape(q), text, re.IGNORECASE)]
    if not spans:
        words = [w for w in re.findall(r"\w+", q.lower()) if len(w) > 1]
        pos = 0
        for line in text.split("\n"):
            low = line.lower()
            if words and all(w in low for w in words):
                spans.append((pos, pos + len(line)))
            pos += len(line) + 1
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        lo, hi = max(0, start - context_chars), min(len(text), end + context_chars)
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return [("…" if lo else "") + text[lo:hi].strip() + ("…" if hi < len(text) else "") for lo, hi in merged]
