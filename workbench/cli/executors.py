"""The flags that pick where episodes run, shared by `workbench run`, `eval` and `evolve`.

add_executor_arguments(parser)                        # --executor, --ray-address, --ray-workers, --ray-mode
executor = executor_from_args(args, worker_tools=spec, policy=args.policy)   # None: local
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.cluster.select import EXECUTORS, make_executor
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.agent.local import LocalExecutor
    from workbench.cluster.executor import RayExecutor
    from workbench.cluster.spec import WorkerTools


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


__all__ = ["add_executor_arguments", "executor_from_args"]
