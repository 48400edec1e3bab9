"""The executor a CLI or config names ("local" or "ray"), built the same way everywhere.

    executor = make_executor("ray", search_tools_spec(corpus="corpus.jsonl"), concurrency=4, workers=2)

`tools` is what each Ray worker builds its tool sets from (`ToolsSpec`s: paths in them must exist on
every node, so they are made absolute here). The command-line flags for it live in `workbench.cli.executors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.agent.local import LocalExecutor
    from workbench.cluster.executor import RayExecutor
    from workbench.cluster.spec import ToolsSpec, WorkerTools

EXECUTORS = ("local", "ray")


def make_executor(
    kind: str = "local",
    tools: WorkerTools | Mapping[str, WorkerTools] | None = None,
    *,
    concurrency: int = 4,
    ray_address: str | None = None,
    **ray_options: Any,
) -> LocalExecutor | RayExecutor:
    """`LocalExecutor(tools, concurrency)` (a `ToolsSpec` built here), or a `RayExecutor` joining
    `ray_address` ("auto": the cluster `ray start` runs here; None: start a local one) with
    `concurrency` kernels per worker. `ray_options` (mode, workers, cpus_per_kernel, strategy,
    retries, worker_policy) go to `RayExecutor`."""
    if kind == "local":
        if ray_address is not None or ray_options:
            raise ConfigError("--ray-address and Ray options need --executor ray")
        from workbench.agent.executor import DEFAULT_TOOLS
        from workbench.agent.local import LocalExecutor
        from workbench.cluster.host import build_toolsets

        named = None if tools is None else tools if isinstance(tools, Mapping) else {DEFAULT_TOOLS: tools}
        return LocalExecutor(None if named is None else build_toolsets(named), concurrency=concurrency)
    if kind == "ray":
        from workbench.cluster.executor import RayExecutor

        ray_options.setdefault("kernels_per_worker", concurrency)
        return RayExecutor(tools, address=ray_address, **ray_options)
    raise ConfigError(f"executor must be one of {', '.join(EXECUTORS)}, got {kind!r}")


def absolute(path: str | None) -> str | None:
    """`path` made absolute (a worker's working directory is not this one's); None stays None."""
    from pathlib import Path

    return str(Path(path).resolve()) if path else None


def search_tools_spec(
    *, corpus: str | None = None, index: str | None = None, tasks_path: str | None = None
) -> ToolsSpec:
    """The `ToolsSpec` of `load_search_tool` with these paths, for the workers."""
    from workbench.cluster.spec import ToolsSpec

    return ToolsSpec(
        "workbench.resolve:load_search_tool",
        corpus=absolute(corpus),
        index=absolute(index),
        tasks_path=absolute(tasks_path),
    )


def tool_set_spec(
    name: str, *, corpus: str | None = None, index: str | None = None, tasks_path: str | None = None
) -> ToolsSpec:
    """The `ToolsSpec` of the tool set registered as `name` (`load_tool_set`), for the workers: they get the
    driver's registrations (`workbench.registrations`), so a tool set registered here resolves there."""
    if name == "search":
        return search_tools_spec(corpus=corpus, index=index, tasks_path=tasks_path)
    from workbench.cluster.spec import ToolsSpec

    return ToolsSpec(
        "workbench.resolve:load_tool_set",
        name=name,
        corpus=absolute(corpus),
        index=absolute(index),
        tasks_path=absolute(tasks_path),
    )


__all__ = [
    "EXECUTORS",
    "absolute",
    "make_executor",
    "search_tools_spec",
    "tool_set_spec",
]
