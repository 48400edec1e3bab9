"""The Ray actor around `EnvHost`, built on first use (so this module imports without Ray).

An asyncio actor: its methods run concurrently on the actor's event loop, so one actor serves all
its kernels. `stats` runs in its own concurrency group and answers while every kernel is busy.

Ray starts workers at niceness 15 (`worker_niceness`), and the kernels a worker starts inherit it;
the actor takes back the default niceness for all its threads where the OS lets it (root or
CAP_SYS_NICE), so its kernels and replies compete for CPU as a local executor's do. Elsewhere
it stays as Ray set it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from workbench.cluster._ray import require_ray

if TYPE_CHECKING:
    from workbench.agent.config import AgentConfig
    from workbench.agent.episode_sandbox import StepResult, ToolPrompt
    from workbench.agent.executor import EpisodeJob
    from workbench.cluster.spec import WorkerPolicy, WorkerTools


def default_niceness() -> None:
    """Niceness 0 for every thread of this process (Linux keeps it per thread, and a thread or
    child inherits its creator's), where the OS lets us lower it; else nothing changes."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        with contextlib.suppress(OSError):  # lowering niceness needs privilege; a thread may be gone
            os.setpriority(os.PRIO_PROCESS, tid, 0)


@lru_cache(maxsize=1)
def worker_class() -> Any:
    """The `ray.remote` class `KernelWorker(tools, kernels, name, registrations)` (made by Ray at run time:
    `Any`); `registrations` is the driver's `workbench.registrations.carry()`."""
    ray = require_ray()

    @ray.remote(concurrency_groups={"health": 1})
    class KernelWorker:
        def __init__(self, tools: Mapping[str, WorkerTools], kernels: int, name: str, registrations: bytes) -> None:
            from workbench.cluster.host import EnvHost
            from workbench.registrations import install_carried

            install_carried(registrations)  # the driver's own policy backends, tool sets …, before any name resolves
            default_niceness()
            ctx = ray.get_runtime_context()
            identity = {"node": ctx.get_node_id(), "worker": name, "actor_id": ctx.get_actor_id()}
            self.host = EnvHost(tools, kernels=kernels, identity=identity)

        async def start(self, warm: AgentConfig | None = None) -> dict[str, Any]:
            return await self.host.start(warm)

        async def open(self, job: EpisodeJob) -> ToolPrompt:
            return await self.host.open(job)

        async def step(self, env_id: str, code: str | None, timeout: float) -> StepResult:
            return await self.host.step(env_id, code, timeout)

        async def close(self, env_id: str) -> None:
            await self.host.close(env_id)

        async def run(self, job: EpisodeJob, policy: WorkerPolicy) -> dict[str, Any]:
            return await self.host.run(job, policy)

        async def kernel_round_trip(self, env_id: str, code: str, calls: int) -> list[float]:
            return await self.host.kernel_round_trip(env_id, code, calls)

        async def ping(self) -> None:
            return None

        @ray.method(concurrency_group="health")
        async def stats(self) -> dict[str, Any]:
            return self.host.stats()

        async def shutdown(self) -> None:
            await self.host.shutdown()

    return KernelWorker


__all__ = ["worker_class"]
