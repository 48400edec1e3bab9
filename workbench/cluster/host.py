"""`EnvHost`: what one cluster worker does, as a plain class (Ray only wraps it: `actor.py`).

A host owns a warm kernel pool per sandbox setting and the tool gateways of the rollouts it runs.
It serves the two ways an executor uses a worker (see `workbench.agent.executor`):

    prompt = await host.open(job)                 # policy in the driver: one environment per episode,
    result = await host.step(job.id, code, 30)    #   one call per step (a StepResult),
    await host.close(job.id)                      #   the kernel is discarded
    row = await host.run(job, policy)             # whole episode here: the trajectory's dict

At most `kernels` episodes are open at once (`open` / `run` wait for room); the driver's scheduler
keeps the same bound, so a worker never queues. Tool sets are built here from their specs, so their
secrets come from this process's environment. Every trajectory's lineage gets `worker` (node, worker
name, actor id, host).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.agent.config import AgentConfig
from workbench.agent.episode_sandbox import LocalEpisodeSandbox, StepResult, ToolPrompt
from workbench.agent.executor import EpisodeJob
from workbench.agent.local import PoolKey, ToolSet, open_episode_sandbox, pool_key
from workbench.cluster.spec import PolicySpec, ToolsSpec, WorkerPolicy, WorkerTools
from workbench.errors import ConfigError
from workbench.trajectory import Trajectory

if TYPE_CHECKING:
    from workbench.kernel import AsyncKernelPool
    from workbench.policies.base import Policy


def build_toolsets(tools: Mapping[str, WorkerTools]) -> dict[str, ToolSet]:
    """Tool sets as this worker uses them: each `ToolsSpec` built here, others as they came."""
    return {name: spec.build() if isinstance(spec, ToolsSpec) else spec for name, spec in tools.items()}


class EnvHost:
    """A worker's kernels, gateways and episodes; see the module docstring."""

    def __init__(
        self,
        tools: Mapping[str, WorkerTools],
        *,
        kernels: int,
        identity: Mapping[str, Any] | None = None,
        root: Path | None = None,
        watchdog: bool = True,
    ) -> None:
        from workbench.agent.local import LocalExecutor
        from workbench.sandbox import default_root

        if kernels < 1:
            raise ConfigError(f"kernels_per_worker must be >= 1, got {kernels}")
        self.kernels = kernels
        self.identity = {"host": socket.gethostname(), "pid": os.getpid(), **dict(identity or {})}
        self.root = Path(root) if root is not None else default_root()
        self._local = LocalExecutor(build_toolsets(tools), concurrency=kernels)
        self._watchdog = watchdog
        self._watch_fd = -1
        self._pools: dict[PoolKey, AsyncKernelPool] = {}
        self._lock: asyncio.Lock | None = None
        self._gate: asyncio.Semaphore | None = None
        self._envs: dict[str, tuple[LocalEpisodeSandbox, contextlib.AsyncExitStack]] = {}
        self._policies: dict[str, Policy] = {}
        self.in_use = self.high_water = self.episodes = self.steps = 0

    # -- lifetime ------------------------------------------------------------------------------
    async def start(self, warm: AgentConfig | None = None) -> dict[str, Any]:
        """Start the watchdog and warm the pool of `warm`'s sandbox setting; returns the identity."""
        if self._watchdog and self._watch_fd < 0:
            from workbench.cluster.watchdog import start_watchdog

            self._watch_fd = start_watchdog(self.root)
        self._lock, self._gate = asyncio.Lock(), asyncio.Semaphore(self.kernels)
        await self._pool_for(warm or AgentConfig())
        return dict(self.identity)

    async def _pool_for(self, agent: AgentConfig) -> AsyncKernelPool:
        assert self._lock is not None, "EnvHost.start() first"
        key = pool_key(agent)
        async with self._lock:
            if key not in self._pools:
                from workbench.agent.local import kernel_pool_for

                pool = kernel_pool_for(agent, self.kernels, root=self.root)
                await pool.start()
                self._pools[key] = pool
            return self._pools[key]

    async def shutdown(self) -> None:
        """Close every open environment and pool; the watchdog then finds nothing left."""
        for env_id in list(self._envs):
            await self.close(env_id)
        pools, self._pools = list(self._pools.values()), {}
        await asyncio.gather(*(p.close() for p in pools), return_exceptions=True)
        if self._watch_fd >= 0:
            os.close(self._watch_fd)
            self._watch_fd = -1

    # -- episodes ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        assert self._gate is not None, "EnvHost.start() first"
        async with self._gate:
            self.in_use += 1
            self.high_water = max(self.high_water, self.in_use)
            try:
                yield
            finally:
                self.in_use -= 1

    async def open(self, job: EpisodeJob) -> ToolPrompt:
        """A fresh kernel and gateway for `job` (the environment is named by `job.id`)."""
        if job.id in self._envs:
            raise ConfigError(f"an environment for job {job.id} is already open on this worker")
        stack = contextlib.AsyncExitStack()
        try:
            await stack.enter_async_context(self._slot())
            pool = await self._pool_for(job.agent)
            env = await open_episode_sandbox(stack, pool, self._local.registry_for(job), job, job.id)
        except BaseException:
            await stack.aclose()
            raise
        self._envs[job.id] = (env, stack)
        return env.prompt

    async def step(self, env_id: str, code: str | None, timeout: float) -> StepResult:
        if env_id not in self._envs:
            raise ConfigError(f"no open environment {env_id} on this worker (closed, or opened elsewhere)")
        self.steps += 1
        return await self._envs[env_id][0].step(code, timeout)

    async def kernel_round_trip(self, env_id: str, code: str, calls: int) -> list[float]:
        """Seconds of each of `calls` executions of `code` in the environment's kernel, timed here
        (the baseline a remote step is measured against, in the process that drives the kernel)."""
        if env_id not in self._envs:
            raise ConfigError(f"no open environment {env_id} on this worker (closed, or opened elsewhere)")
        kernel, times = self._envs[env_id][0].kernel, []
        for _ in range(calls):
            t = time.perf_counter()
            await kernel.execute(code, timeout=30)
            times.append(time.perf_counter() - t)
        return times

    async def close(self, env_id: str) -> None:
        """Discard the environment's kernel and gateway (unknown ids are ignored)."""
        entry = self._envs.pop(env_id, None)
        if entry is not None:
            self.episodes += 1
            await entry[1].aclose()

    async def run(self, job: EpisodeJob, policy: WorkerPolicy) -> dict[str, Any]:
        """A whole episode here with `policy` (a `PolicySpec` is built once per worker); returns
        the trajectory's `to_dict()`."""
        built = self._policy(policy)
        async with self._slot():
            traj = await self._local.run(job, built, await self._pool_for(job.agent))
        self.episodes += 1
        self.stamp(traj)
        return traj.to_dict()

    def _policy(self, policy: WorkerPolicy) -> Policy:
        if not isinstance(policy, PolicySpec):
            return policy
        key = repr(policy)  # names env vars, never their values
        if key not in self._policies:
            self._policies[key] = policy.build()
        return self._policies[key]

    def stamp(self, traj: Trajectory) -> None:
        """Record in `traj.lineage["worker"]` where it ran."""
        traj.lineage["worker"] = {
            k: self.identity[k] for k in ("node", "worker", "actor_id", "host") if k in self.identity
        }

    def stats(self) -> dict[str, Any]:
        pools = list(self._pools.values())
        return {
            **self.identity,
            "alive": True,
            "kernels": self.kernels,
            "warm": sum(p.warm for p in pools),
            "in_use": self.in_use,
            "high_water": self.high_water,
            "started": sum(p.started for p in pools),
            "failed": sum(p.failed_starts for p in pools),
            "episodes": self.episodes,
            "steps": self.steps,
            "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "at": time.time(),
        }


__all__ = ["EnvHost", "build_toolsets"]
