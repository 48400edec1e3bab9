"""Tool-set factories of the commands, for a local run and for the `ToolsSpec`s they send to Ray workers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.tools import ToolRegistry


def evolve_tools(role: str, corpus: str) -> ToolRegistry:
    """Self-evolution's tool set of `role` ("proposer" or "solver"): BM25 over `corpus` (JSONL)."""
    from workbench.evolve.proposer import proposer_tools, solver_tools
    from workbench.search import BM25Retriever, Corpus

    if role not in ("proposer", "solver"):
        raise ConfigError(f"role must be 'proposer' or 'solver', got {role!r}")
    retriever = BM25Retriever.build(Corpus.from_jsonl(corpus), show_progress=False)
    return (proposer_tools if role == "proposer" else solver_tools)(retriever)


def eval_tools(retriever: str | None, dataset: str) -> ToolRegistry:
    """`workbench eval`'s search tool: a saved index, bm25:CORPUS, a Search-R1 server, or the corpus
    beside the dataset."""
    from workbench.resolve import load_search_tool, search_registry

    if retriever is None:
        return load_search_tool(tasks_path=dataset)
    if retriever.startswith(("http://", "https://")):
        from workbench.search import RemoteRetriever

        return search_registry(RemoteRetriever(retriever))
    if retriever.startswith("bm25:"):
        return load_search_tool(corpus=retriever[len("bm25:") :])
    return load_search_tool(index=retriever)


__all__ = ["eval_tools", "evolve_tools"]
