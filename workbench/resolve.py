"""Turn command-line / config strings into the objects a run needs: tasks, tools, policy, reward.

Its own layer, above what it builds (worlds, search, tools, policies, rewards) and below everything that
takes a config of strings: the CLI, training, self-evolution, the demo, and Ray workers building a
`ToolsSpec("workbench.resolve:load_search_tool", ...)` or a `PolicySpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench.errors import ConfigError
from workbench.registrations import record, why_missing
from workbench.trajectory import Task

if TYPE_CHECKING:
    from workbench.policies.base import Policy
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
) -> ToolRegistry:
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


# -- tool sets: `--tools NAME` ------------------------------------------------------------------
class ToolSetFactory(Protocol):
    """Builds the tools of a run. It gets the run's paths (each may be None) and may ignore them."""

    def __call__(
        self, *, corpus: str | Path | None, index: str | Path | None, tasks_path: str | Path | None
    ) -> ToolRegistry: ...


_TOOL_SETS: dict[str, ToolSetFactory] = {}
_BUILTIN_TOOL_SETS_ADDED = False


def register_tool_set(name: str, factory: ToolSetFactory, *, replace: bool = True) -> None:
    """Make `--tools NAME` (and `load_tool_set(NAME, ...)`) build the run's tools with `factory`."""
    if not isinstance(name, str) or not name.replace("-", "_").isidentifier():
        raise ConfigError(f"tool set name {name!r} must be an identifier such as 'my_tools'")
    if not callable(factory):
        raise ConfigError(f"tool set {name!r} must be callable as factory(corpus=, index=, tasks_path=)")
    builtin_tool_sets()
    if not replace and name in _TOOL_SETS:
        raise ConfigError(f"a tool set named {name!r} is already registered")
    _TOOL_SETS[name] = factory
    record("tool set", name, factory, register_tool_set)


def tool_set_names() -> list[str]:
    builtin_tool_sets()
    return sorted(_TOOL_SETS)


def load_tool_set(
    name: str,
    *,
    corpus: str | Path | None = None,
    index: str | Path | None = None,
    tasks_path: str | Path | None = None,
) -> ToolRegistry:
    """The tools registered as `name`, built for these paths."""
    builtin_tool_sets()
    if name not in _TOOL_SETS:
        raise ConfigError(
            f"unknown tool set {name!r}; known: {', '.join(tool_set_names())}. Register your own with "
            "workbench.resolve.register_tool_set(name, factory) before the run, where "
            "factory(corpus=, index=, tasks_path=) returns a ToolRegistry" + why_missing("tool set", name)
        )
    return _TOOL_SETS[name](corpus=corpus, index=index, tasks_path=tasks_path)


def _no_tools(**_: object) -> ToolRegistry:
    from workbench.tools import ToolRegistry

    return ToolRegistry([])


def builtin_tool_sets() -> None:
    """Register "search" (a saved index, a corpus, or the tasks' world; see `load_search_tool`) and
    "none" (only submit_final_answer). Runs once, from the first lookup or registration."""
    global _BUILTIN_TOOL_SETS_ADDED
    if _BUILTIN_TOOL_SETS_ADDED:
        return
    _BUILTIN_TOOL_SETS_ADDED = True
    _TOOL_SETS.setdefault("search", load_search_tool)
    _TOOL_SETS.setdefault("none", _no_tools)


# -- policies: `--policy BACKEND:ARG` -----------------------------------------------------------
_BUILTIN_POLICIES_ADDED = False


def _world_solver(**kwargs: Any) -> Policy:
    from workbench.worlds.scripted.solver import world_solver

    return world_solver(**kwargs)


def _world_coder(**kwargs: Any) -> Policy:
    from workbench.worlds.scripted.coder import world_coder

    return world_coder(**kwargs)


def builtin_policies() -> None:
    """Register the scripted world solvers: `scripted` / `scripted:world` (the search + notepad
    solver) and `scripted:coder`, unless something is registered under those names already.
    Runs once, from the first `resolve_policy`; the backends themselves come with
    `workbench.policies.register_backend`'s registry."""
    global _BUILTIN_POLICIES_ADDED
    if _BUILTIN_POLICIES_ADDED:
        return
    _BUILTIN_POLICIES_ADDED = True
    from workbench.policies.registry import register_scripted, scripted_names

    taken = set(scripted_names())
    for name, factory in (("default", _world_solver), ("world", _world_solver), ("coder", _world_coder)):
        if name not in taken:
            register_scripted(name, factory)


def resolve_policy(spec: str, **kwargs: Any) -> Policy:
    """`load_policy` with the built-in scripted solvers registered."""
    from workbench.policies import load_policy

    builtin_policies()
    return load_policy(spec, **kwargs)


__all__ = [
    "ToolSetFactory",
    "builtin_policies",
    "builtin_tool_sets",
    "load_search_tool",
    "load_tasks",
    "load_tool_set",
    "register_tool_set",
    "resolve_policy",
    "search_registry",
    "tool_set_names",
]
