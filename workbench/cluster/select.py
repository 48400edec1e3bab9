"""The executor a CLI or config names ("local" or "ray"), built the same way everywhere.

    add_executor_arguments(parser)                        # --executor, --ray-address, --ray-workers, --ray-mode
    executor = executor_from_args(args, worker_tools=spec, policy=args.policy)   # None: local

`worker_tools` is what each Ray worker builds its tool sets from (`ToolsSpec`s: paths in them must
exist on every node, so they are made absolute here).
"""

from __future__ import annotations

import argparse
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


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where episodes run")
    g.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local: kernels on this machine; ray: kernel workers on a Ray cluster (pip install 'workbench[ray]')",
    )
    g.add_argument(
        "--ray-address",
        default=None,
        help="with --executor ray: 'auto' joins the cluster `ray start` runs here, HOST:PORT or "
        "ray://HOST:PORT another; unset starts a local one",
    )
    g.add_argument(
        "--ray-workers",
        type=int,
        default=1,
        help="with --executor ray: kernel workers to place (each with --concurrency kernels)",
    )
    g.add_argument(
        "--ray-mode",
        choices=("env", "episode"),
        default="env",
        help="with --executor ray: env = the policy runs here, kernels on the workers; episode = "
        "whole episodes on the workers, which build the policy from --policy (an openai:URL "
        "server they can reach)",
    )


def executor_from_args(
    args: argparse.Namespace, *, worker_tools: WorkerTools | Mapping[str, WorkerTools] | None, policy: str | None = None
) -> LocalExecutor | RayExecutor | None:
    """The executor the flags ask for, or None for local (the caller's default path)."""
    if getattr(args, "executor", "local") == "local":
        if args.ray_address is not None:
            raise ConfigError("--ray-address needs --executor ray")
        return None
    options: dict[str, Any] = {"workers": args.ray_workers, "mode": args.ray_mode}
    if args.ray_mode == "episode":
        if policy is None:
            raise ConfigError("--ray-mode episode needs a policy the workers can build (--policy openai:URL)")
        options["worker_policy"] = policy
    return make_executor("ray", worker_tools, concurrency=args.concurrency, ray_address=args.ray_address, **options)


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
        "workbench.agent.resolve:load_search_tool",
        corpus=absolute(corpus),
        index=absolute(index),
        tasks_path=absolute(tasks_path),
    )


__all__ = [
    "EXECUTORS",
    "absolute",
    "add_executor_arguments",
    "executor_from_args",
    "make_executor",
    "search_tools_spec",
]
