"""Distributed rollouts on Ray: kernel workers on many machines behind the executor seam.

    from workbench.cluster import RayExecutor, ToolsSpec
    executor = RayExecutor({"default": ToolsSpec("workbench.resolve:load_search_tool",
                                                 corpus="/data/corpus.jsonl")},
                           workers=4, kernels_per_worker=4, address="auto")

Ray is an extra (`pip install 'workbench[ray]'`), imported only when a worker is started:
importing this package, or anything else in workbench, never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports
from workbench.cluster.spec import PolicySpec, ToolsSpec

if TYPE_CHECKING:
    from workbench.cluster.executor import RayExecutor
    from workbench.cluster.workers import RayWorkers, connect
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {"workbench.cluster.executor": ["RayExecutor"], "workbench.cluster.workers": ["RayWorkers", "connect"]},
    )

__all__ = ["PolicySpec", "RayExecutor", "RayWorkers", "ToolsSpec", "connect"]
