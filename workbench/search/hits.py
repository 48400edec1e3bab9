"""What every retriever returns (`Hit`), the protocol they share, and how hits become prompt text.

hits = retriever.search("who built the Zorvath bridge", top_k=3)
format_hits(hits)                      # Dr. Zero / verl style
format_hits(hits, style="search_r1")   # original Search-R1 style
format_hits(hits, template="[{i}] {title}: {text}", sep="\\n")
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from workbench.passages import Hit, join_contents, split_contents


@runtime_checkable
class Retriever(Protocol):
    """Anything that answers batched queries with ranked hits, best first."""

    def retrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]: ...

    def search(self, query: str, top_k: int = 3) -> list[Hit]: ...


class RetrieverBase(abc.ABC):
    """Mixin giving `search` in terms of `retrieve` and a tiny argument check."""

    @abc.abstractmethod
    def retrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]:
        """One list of hits per query, best first."""

    def search(self, query: str, top_k: int = 3) -> list[Hit]:
        """Top-`top_k` hits for one query."""
        return self.retrieve([query], top_k=top_k)[0]


def check_queries(queries: Iterable[object], top_k: int) -> list[str]:
    """Validate `retrieve` arguments; a bare string is the common mistake."""
    from workbench.errors import ConfigError

    if isinstance(queries, str):
        raise ConfigError("retrieve() takes a list of queries; use search(query) for one string")
    if int(top_k) < 1:
        raise ConfigError(f"top_k must be >= 1, got {top_k}")
    return [str(q) for q in queries]


STYLES: dict[str, tuple[str, str]] = {
    # Dr. Zero / verl `search_r1_like_utils`: "Doc 1 (Title: t)\ntext", blank line between docs.
    "drzero": ("Doc {i} (Title: {title})\n{text}", "\n\n"),
    # Original Search-R1 `generation.py`: "Doc 1(Title: t) text", one per line.
    "search_r1": ("Doc {i}(Title: {title}) {text}", "\n"),
}


def format_hits(
    hits: list[Hit],
    style: str = "drzero",
    *,
    template: str | None = None,
    sep: str | None = None,
    quote_titles: bool = False,
) -> str:
    """Render hits as the text a search tool hands back to the model.

    `style` picks a preset (`"drzero"` or `"search_r1"`); `template` (placeholders `{i}`,
    `{title}`, `{text}`, `{id}`, `{score}`) and `sep` override it. Upstream clients take the raw
    first line of `contents` as the title, quotes included; pass `quote_titles=True` to match
    them byte for byte.
    """
    from workbench.errors import ConfigError

    if template is None:
        if style not in STYLES:
            raise ConfigError(f"unknown hit style {style!r}; use one of {sorted(STYLES)} or pass template=")
        template, default_sep = STYLES[style]
    else:
        default_sep = "\n\n"
    sep = default_sep if sep is None else sep
    parts = []
    for i, h in enumerate(hits, start=1):
        title = f'"{h.title}"' if quote_titles else h.title
        parts.append(template.format(i=i, title=title, text=h.text, id=h.id, score=h.score))
    return sep.join(parts)


__all__ = [
    "STYLES",
    "Hit",
    "Retriever",
    "RetrieverBase",
    "check_queries",
    "format_hits",
    "join_contents",
    "split_contents",
]
