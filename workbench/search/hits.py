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

from workbench.passages import STYLES, Hit, format_hits, join_contents, split_contents


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
