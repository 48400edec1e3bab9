"""`LocalExecutor`: episodes in sandboxed kernels on this machine.

    executor = LocalExecutor({"solver": solver_tools, "proposer": proposer_tools}, concurrency=4)
    async for i, traj in executor.stream(jobs, policy): ...
    await executor.aclose()

The only place a kernel pool and tool gateways are built. Tool sets are named; a job picks one by
name (`EpisodeJob.tools`). A tool set is a `ToolRegistry`, or a function `task -> ToolRegistry`
called per episode (a search bound to the task, as ZeroSearch's simulator needs). One warm pool per
sandbox setting (profile, isolation, output cap) is started on first use and lives until
`aclose()`, across batches and policies (a later batch starts new ones); at most `concurrency`
episodes run at once over all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from workbench.agent.config import AgentConfig
from workbench.agent.episode import run_episode
from workbench.agent.episode_sandbox import LocalEpisodeSandbox
from workbench.agent.executor import DEFAULT_TOOLS, EpisodeJob, TrajectoryStream, stream_as_done
from workbench.agent.groups import GroupSetups, Promise, keep
from workbench.agent.recorder import describe
from workbench.errors import ConfigError, KernelError
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.kernel import AsyncKernelPool
    from workbench.kernel.fork import Snapshot
    from workbench.policies.base import Policy
    from workbench.tools import ToolRegistry

ToolSet = Union["ToolRegistry", Callable[[Task], "ToolRegistry"]]  # a registry, or task -> registry
_log = logging.getLogger(__name__)
PoolKey = tuple[str, str, int]  # the sandbox setting a pool serves: profile, isolation, output cap


def pool_key(agent: AgentConfig) -> PoolKey:
    return (agent.profile, agent.isolation, agent.output_cap)


class _Kernels:
    """The pools, concurrency gate and lock of one event loop."""

    def __init__(self, concurrency: int, given_pool: AsyncKernelPool | None) -> None:
        self.loop = asyncio.get_running_loop()
        self.gate = asyncio.Semaphore(concurrency)
        self.lock = asyncio.Lock()
        self.concurrency, self.given_pool = concurrency, given_pool
        self.pools: dict[PoolKey, AsyncKernelPool] = {}
        self._keeper: AsyncIterator[None] | None = None

    async def close_with_loop(self) -> None:
        """Close the pools when their event loop shuts down (`asyncio.run` ends, or `loop.shutdown_asyncgens()`),
        if nothing closed them before: asyncio finalizes the async generators it has seen start, on their loop,
        before the loop closes; a loop that is closed can no longer close its kernels."""

        async def keeper() -> AsyncIterator[None]:
            try:
                yield
            finally:
                await self.close()

        self._keeper = keeper()
        await anext(self._keeper)

    async def pool_for(self, agent: AgentConfig) -> AsyncKernelPool:
        if self.given_pool is not None:
            return self.given_pool
        key = pool_key(agent)
        async with self.lock:
            if key not in self.pools:
                pool = kernel_pool_for(agent, self.concurrency)
                await pool.start()
                self.pools[key] = pool
            return self.pools[key]

    async def close(self) -> None:
        pools, self.pools = list(self.pools.values()), {}
        await asyncio.gather(*(p.close() for p in pools), return_exceptions=True)


_PUSH_NOTEPAD = "\n__import__('workbench.runtime.bridge', fromlist=['push_now']).push_now()"


async def open_episode_sandbox(
    stack: contextlib.AsyncExitStack,
    pool: AsyncKernelPool,
    tools: ToolRegistry,
    job: EpisodeJob,
    rollout_id: str,
    state: Snapshot | None = None,
) -> LocalEpisodeSandbox:
    """A kernel from `pool` with this rollout's gateway started and the setup cell run (tools, notepad,
    the task variable), then `task_setup` run or, given a group's `state`, that state restored; both
    close with `stack`. Used here and by remote kernel workers."""
    from workbench.runtime import notepad_api_doc
    from workbench.tools import ToolGateway, setup_code

    config = job.agent
    kernel = await stack.enter_async_context(pool.acquire())
    token = secrets.token_hex(16)
    gateway = ToolGateway(
        tools,
        kernel.kernel_dir / "run" / "gateway.sock",
        rollout_id=rollout_id,
        token=token,
        call_timeout_s=config.tool_timeout_s,
        call_budget=config.tool_call_budget,
    )
    await stack.enter_async_context(gateway)
    code = setup_code(tools, token=token)
    if config.task_variable:
        code += f"{config.task_variable} = {job.task.question!r}\n"
    setup = await kernel.execute(code, timeout=30)
    if not setup.ok:
        raise RuntimeError(f"runtime setup failed in the kernel: {setup.text}")
    if state is not None:
        await state.restore(kernel)
    elif config.task_setup:
        done = await kernel.execute(config.task_setup + _PUSH_NOTEPAD, timeout=config.exec_timeout_s, silent=True)
        if not done.ok:
            raise RuntimeError(f"AgentConfig.task_setup failed in the kernel: {done.text}")
        gateway.take_calls()  # the setup's tool calls are not the first turn's (nor, forked, are they)
    return LocalEpisodeSandbox(kernel, gateway, tools.prompt_text(), notepad_api_doc())


class LocalExecutor:
    """An `Executor` over local kernel pools; see the module docstring. `pool`: use this started
    pool for every episode (it is not closed here).

    The pools live on the event loop that first used the executor, and close with it (or with `aclose`);
    a batch streamed from another loop (say `asyncio.run` inside a training hook) gets pools of its own,
    closed when it ends."""

    def __init__(
        self,
        tools: ToolSet | Mapping[str, ToolSet] | None = None,
        *,
        concurrency: int = 4,
        pool: AsyncKernelPool | None = None,
    ) -> None:
        from workbench.tools import ToolRegistry

        if concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
        if tools is None:
            tools = ToolRegistry([])
        self.toolsets: dict[str, ToolSet] = dict(tools) if isinstance(tools, Mapping) else {DEFAULT_TOOLS: tools}
        self.concurrency = concurrency
        self._given_pool = pool
        self._home: _Kernels | None = None
        self.started = self.finished = self.in_flight = self.high_water = 0

    def registry_for(self, job: EpisodeJob) -> ToolRegistry:
        """The tool registry of `job`'s episode (a per-task tool set is called here)."""
        from workbench.tools import ToolRegistry

        try:
            tools = self.toolsets[job.tools]
        except KeyError:
            raise ConfigError(
                f"no tool set {job.tools!r} in this executor (it has {sorted(self.toolsets)}); "
                "name one of them in EpisodeJob.tools or pass it to LocalExecutor"
            ) from None
        return tools if isinstance(tools, ToolRegistry) else tools(job.task)

    # -- episodes --------------------------------------------------------------------------
    async def run(
        self,
        job: EpisodeJob,
        policy: Policy,
        pool: AsyncKernelPool,
        state: Snapshot | None = None,
        promise: Promise | None = None,
    ) -> Trajectory:
        """One episode in a fresh kernel of `pool`: given its group's `state`, that state is restored
        instead of `task_setup` run; given a `promise`, its kernel's snapshot keeps it before the first
        turn (see `workbench.agent.groups`). Never raises for the episode's failure: a kernel or
        gateway failure ends up in the trajectory (`termination`, `error`)."""
        traj = job.trajectory()
        try:
            return await self._episode(job, policy, traj, pool, state, promise)
        except Exception as exc:  # pool or gateway failure: this episode ends, the batch goes on
            traj.termination = traj.termination or "error"
            traj.error = traj.error or describe(exc)
            traj.ended_at = time.time()
            return traj
        finally:
            keep(promise, None)  # failed before its snapshot: the group's others run the setup

    async def _episode(
        self,
        job: EpisodeJob,
        policy: Policy,
        traj: Trajectory,
        pool: AsyncKernelPool,
        state: Snapshot | None,
        promise: Promise | None,
    ) -> Trajectory:
        async with contextlib.AsyncExitStack() as stack:
            env = await open_episode_sandbox(stack, pool, self.registry_for(job), job, traj.id, state)
            if promise is not None:
                keep(promise, await _group_snapshot(env))
            return await run_episode(job.task, policy, env, job.agent, trajectory=traj, seed=job.seed)

    async def stream(self, jobs: Sequence[EpisodeJob], policy: Policy) -> TrajectoryStream:
        """Yield `(index, trajectory)` as episodes end, exactly one per job. The pools the jobs need
        are started first (a sandbox that cannot start raises `PoolError` here)."""
        jobs = list(jobs)
        for name in {job.tools for job in jobs} - set(self.toolsets):
            raise ConfigError(f"no tool set {name!r} in this executor (it has {sorted(self.toolsets)})")
        loop = asyncio.get_running_loop()
        if self._home is None or self._home.loop.is_closed():
            self._home = _Kernels(self.concurrency, self._given_pool)
            await self._home.close_with_loop()
        kernels = self._home if self._home.loop is loop else _Kernels(self.concurrency, self._given_pool)
        try:
            async for pair in self._stream(jobs, policy, kernels):
                yield pair
        finally:
            if kernels is not self._home:
                await kernels.close()

    async def _stream(self, jobs: list[EpisodeJob], policy: Policy, kernels: _Kernels) -> TrajectoryStream:
        pools: dict[PoolKey, AsyncKernelPool] = {}
        for job in jobs:
            key = pool_key(job.agent)
            if key not in pools:
                pools[key] = await kernels.pool_for(job.agent)

        groups = GroupSetups(jobs)

        async def run(job: EpisodeJob) -> Trajectory:
            promise, state = await groups.join(job)  # a follower waits without holding a place under the gate
            async with kernels.gate:
                self._begin()
                try:
                    return await self.run(job, policy, pools[pool_key(job.agent)], state, promise)
                finally:
                    self.in_flight -= 1
                    self.finished += 1

        try:
            async for done in stream_as_done(jobs, run):
                yield done
        finally:
            groups.close()

    def _begin(self) -> None:
        self.started += 1
        self.in_flight += 1
        self.high_water = max(self.high_water, self.in_flight)

    # -- lifetime --------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        pools = list(self._home.pools.values()) if self._home is not None else []
        if self._given_pool is not None:
            pools = [self._given_pool]
        kernels = {
            name: sum(getattr(p, name, 0) for p in pools) for name in ("warm", "in_use", "started", "failed_starts")
        }
        return {
            "started": self.started,
            "finished": self.finished,
            "in_flight": self.in_flight,
            "high_water": self.high_water,
            "pools": len(pools),
            "kernels": kernels,
        }

    async def aclose(self) -> None:
        """Close the pools this executor started (a pool passed in stays open). Using the executor
        again starts new ones."""
        if self._home is not None:
            await self._home.close()

    def close(self) -> None:
        """`aclose()` from sync code (the pools live on workbench's background loop)."""
        from workbench.kernel.sync import run_sync

        run_sync(self.aclose())

    async def __aenter__(self) -> LocalExecutor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _group_snapshot(env: LocalEpisodeSandbox) -> Snapshot | None:
    """The snapshot a group's first episode shares, or None (then the others run the setup)."""
    from workbench.kernel import AsyncKernel
    from workbench.kernel.fork import snapshot

    assert isinstance(env.kernel, AsyncKernel)  # a pool's kernel
    try:
        state = await snapshot(env.kernel)
    except KernelError as exc:
        _log.warning("fork_groups: the group's snapshot failed, so each episode runs the setup: %s", exc)
        return None
    if state.skipped:
        _log.warning("fork_groups: the group setup's %s were not copied into its episodes", state.skipped)
    return state


def kernel_pool_for(agent_config: AgentConfig, size: int, *, root: Path | None = None) -> AsyncKernelPool:
    """The (not yet started) `AsyncKernelPool` an agent config's episodes run in: its sandbox profile, isolation
    and output cap, `size` kernels, `workbench.runtime` imported at start. The one place executors, remote
    kernel hosts and `kernel_pool` build one; `root` is where rollout directories go (default: a temp dir)."""
    from workbench.kernel import AsyncKernelPool

    return AsyncKernelPool(
        size=size,
        profile=agent_config.profile,
        isolation=agent_config.isolation,
        start=None if agent_config.kernel_start == "auto" else agent_config.kernel_start,
        output_cap=agent_config.output_cap,
        startup_code="import workbench.runtime",
        root=root,
    )


@contextlib.asynccontextmanager
async def kernel_pool(agent_config: AgentConfig, size: int) -> AsyncIterator[AsyncKernelPool]:
    """A started `kernel_pool_for(agent_config, size)`, for code that drives `NBAgent(pool=...)`
    itself (QA synthesis); episode runs go through an executor, which keeps its own pools."""
    pool = kernel_pool_for(agent_config, size)
    await pool.start()
    try:
        yield pool
    finally:
        await pool.close()


__all__ = ["LocalExecutor", "PoolKey", "ToolSet", "kernel_pool", "kernel_pool_for", "open_episode_sandbox", "pool_key"]
