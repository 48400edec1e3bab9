"""Built-in tools: `submit_final_answer` and `search_tool(retriever)`.

    retriever = InMemoryRetriever([{"title": "Paris", "text": "Paris is the capital of France."}])
    registry = ToolRegistry([search_tool(retriever)])
    registry.get("search")("capital of France", top_k=1)
    # 'Doc 1 (Title: Paris) Paris is the capital of France.'

`search_tool` accepts either retriever shape, duck-typed:
  - `retrieve(queries: list[str], top_k) -> list[list[hit]]` (workbench.search's protocol), or
  - `search(query: str, top_k) -> list[hit]`;
a hit is any object (or dict) with `title` and `text` (or a Search-R1 style `contents` whose
first line is the title). Async `retrieve`/`search` methods give an async tool.

`search_tool(retriever, task=task)` binds a retriever that has `for_task(question, answers, task_id)`
(ZeroSearch's `SimulatedSearch`) to that task, so the documents it writes know the question and
its gold answer; other retrievers ignore the task.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from workbench.errors import ConfigError, ToolError
from workbench.passages import Hit, format_hits
from workbench.tools.registry import Tool, make_tool, submit_final_answer

if TYPE_CHECKING:
    from workbench.trajectory import Task


class BatchSearch(Protocol):
    """`retrieve(queries, top_k)`: one list of hits per query, best first (workbench.search's
    `Retriever` is one); an async method gives an async tool."""

    def retrieve(self, queries: list[str], top_k: int = ...) -> Any: ...


class SingleSearch(Protocol):
    """`search(query, top_k)`: the hits of one query, best first; an async method gives an async tool."""

    def search(self, query: str, top_k: int = ...) -> Any: ...


SearchBackend = BatchSearch | SingleSearch
"""What a search tool searches (see the module docstring): a hit is any object or dict with a title
and a text, or a Search-R1 `contents`."""


def tool_text(hits: list[object]) -> str:
    """What the `search` tool prints: `Doc 1 (Title: t) text` lines (texts stripped), or "No results."."""
    stripped = (dataclasses.replace(hit, text=hit.text.strip()) for hit in map(Hit.coerce, hits))
    return format_hits(stripped, "tool", empty="No results.")


def bind_task(retriever: SearchBackend, task: Task | None) -> SearchBackend:
    """`retriever.for_task(task.question, task.golden_answers, task_id=task.id)` when it has one, else `retriever`."""
    for_task = getattr(retriever, "for_task", None)
    if task is None or not callable(for_task):
        return retriever
    bound: SearchBackend = for_task(task.question, list(task.golden_answers), task_id=str(task.id))
    return bound


def search_tool(
    retriever: SearchBackend, *, name: str = "search", max_top_k: int = 10, task: Task | None = None
) -> Tool:
    """A `search(query: str, top_k: int = 3) -> str` tool over `retriever` (see module doc)."""
    retriever = bind_task(retriever, task)
    retrieve, search_one = getattr(retriever, "retrieve", None), getattr(retriever, "search", None)
    if callable(retrieve):
        method = retrieve
        batched = True
    elif callable(search_one):
        method = search_one
        batched = False
    else:
        raise ConfigError(
            f"{type(retriever).__name__} has neither retrieve(queries, top_k) nor "
            "search(query, top_k); wrap it in an object with one of them"
        )

    def check(query: str, top_k: int) -> None:
        if not query.strip():
            raise ToolError("search() needs a non-empty query")
        if not 1 <= top_k <= max_top_k:
            raise ToolError(f"search() top_k must be between 1 and {max_top_k}, got {top_k}")

    def hits_of(result: Any) -> list[Any]:
        return list(result[0]) if batched else list(result)

    async def async_search(query: str, top_k: int = 3) -> str:
        check(query, top_k)
        return tool_text(hits_of(await method([query] if batched else query, top_k)))

    def search(query: str, top_k: int = 3) -> str:
        check(query, top_k)
        return tool_text(hits_of(method([query] if batched else query, top_k)))

    fn: Callable[..., object] = async_search if inspect.iscoroutinefunction(method) else search
    fn.__doc__ = (
        f"Search the document collection. Returns the top_k (1-{max_top_k}) most "
        "relevant documents as lines 'Doc i (Title: ...) text'."
    )
    return make_tool(fn, name=name)


_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class InMemoryRetriever:
    """A small TF-IDF keyword retriever over documents held in memory (for tests and demos).

    `docs` items may be strings, (title, text) pairs, or dicts with title/text (and optional id).
    """

    def __init__(self, docs: list[Any]) -> None:
        self.docs: list[Hit] = []
        for i, doc in enumerate(docs):
            if isinstance(doc, str):
                self.docs.append(Hit(str(i), doc.split(".")[0][:60], doc))
            elif isinstance(doc, (tuple, list)) and len(doc) == 2:
                self.docs.append(Hit(str(i), str(doc[0]), str(doc[1])))
            elif isinstance(doc, dict) and "text" in doc:
                self.docs.append(Hit(str(doc.get("id", i)), str(doc.get("title", "")), str(doc["text"])))
            else:
                raise ConfigError(
                    f"document {i} must be a str, a (title, text) pair or a dict with 'text', got {type(doc).__name__}"
                )
        self._counts = [Counter(_tokens(f"{d.title} {d.text}")) for d in self.docs]
        df = Counter(tok for counts in self._counts for tok in counts)
        self._idf = {tok: math.log(1 + len(self.docs) / n) for tok, n in df.items()}

    def search(self, query: str, top_k: int = 3) -> list[Hit]:
        terms = set(_tokens(query))
        scored = []
        for doc, counts in zip(self.docs, self._counts, strict=True):
            score = sum(self._idf[t] * (1 + math.log(counts[t])) for t in terms if t in counts)
            if score > 0:
                scored.append(Hit(doc.id, doc.title, doc.text, round(score, 4)))
        scored.sort(key=lambda h: -h.score)
        return scored[:top_k]

    def retrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]:
        return [self.search(q, top_k) for q in queries]


__all__ = ["Hit", "InMemoryRetriever", "bind_task", "format_hits", "search_tool", "submit_final_answer", "tool_text"]
