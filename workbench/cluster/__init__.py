"""Distributed rollouts on Ray: kernel workers on many machines behind the executor seam.

    from workbench.cluster import RayExecutor, ToolsSpec
    executor = RayExecutor({"default": ToolsSpec("workbench.resolve:load_search_tool",
                                                 corpus="/data/corpus.jsonl")},
                           workers=4, kernels_per_worker=4, address="auto")

Ray is an extra (`pip install 'workbench[ray]'`), imported only when a worker is started:
importing this package, or anything else in workbench, never imports it.
"""

from __future__ import annotations

from typing import Any

from workbench.cluster.spec import PolicySpec, ToolsSpec

_LAZY = {
    "RayExecutor": "workbench.cluster.executor",
    "RayWorkers": "workbench.cluster.workers",
    "connect": "workbench.cluster.workers",
    "EnvHost": "workbench.cluster.host",
    "make_executor": "workbench.cluster.select",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'workbench.cluster' has no attribute {name!r}")


__all__ = ["EnvHost", "PolicySpec", "RayExecutor", "RayWorkers", "ToolsSpec", "connect", "make_executor"]
