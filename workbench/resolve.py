"""Turn command-line / config strings into the objects a run needs: tasks, tools, policy, reward.

Its own layer, above what it builds (worlds, search, tools, policies, rewards) and below everything that
takes a config of strings: the CLI, training, self-evolution, the demo, and Ray workers building a
`ToolsSpec("workbench.resolve:load_search_tool", ...)` or a `PolicySpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.trajectory import Task

if TYPE_CHECKING:
    from workbench.search.hits import Retriever
    from workbench.tools import ToolRegistry


def load_tasks(path: str | Path, *, limit: int | None = None) -> list[Task]:
    """Search-R1/FlashRAG-style QA JSONL (`id`, `question`, `golden_answers`, metadata)."""
    from workbench.worlds import load_qa

    tasks = list(load_qa(path))
    if not tasks:
        raise ConfigError(f"{path} holds no tasks; each line needs at least a 'question'")
    return tasks[:limit] if limit else tasks


def search_registry(retriever: Retriever, task: Task | None = None) -> ToolRegistry:
    """A tool registry with `search` over `retriever` (plus `submit_final_answer`); with `task`, a
    simulated search is bound to that task's question and gold answers."""
    from workbench.tools import ToolRegistry, search_tool

    return ToolRegistry([search_tool(retriever, task=task)])


def load_search_tool(
    *, corpus: str | Path | None = None, index: str | Path | None = None, tasks_path: str | Path | None = None
) -> Any:
    """Registry with a `search` tool: a saved index, else BM25 over a corpus, else over the
    `corpus.jsonl` that sits next to the task file (a saved world). No corpus: no search tool."""
    from workbench.tools import ToolRegistry

    if index:
        from workbench.search import load_index

        return search_registry(load_index(index))
    if corpus is None and tasks_path is not None:
        beside = Path(tasks_path).parent / "corpus.jsonl"
        corpus = beside if beside.exists() else None
    if corpus is None:
        return ToolRegistry([])
    from workbench.search import BM25Retriever, Corpus

    return search_registry(BM25Retriever.build(Corpus.from_jsonl(corpus), show_progress=False))


def resolve_policy(spec: str) -> Any:
    """`load_policy` with the built-in scripted solvers registered."""
    import workbench.worlds.solver  # noqa: F401  registers scripted:default / scripted:world
    from workbench.policies import load_policy

    return load_policy(spec)


def resolve_reward(spec: str | None) -> Any:
    """A scorer from a preset, component, spec file or JSON (`workbench.rewards.resolve_reward`);
    None means no scoring."""
    if not spec:
        return None
    from workbench.rewards import resolve_reward as resolve

    return resolve(spec)


__all__ = ["load_search_tool", "load_tasks", "resolve_policy", "resolve_reward", "search_registry"]
