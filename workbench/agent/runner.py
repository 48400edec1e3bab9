"""`NBAgent`: many episodes at once over a pool of sandboxed kernels, each written to the store
the moment it ends.

    from workbench import NBAgent, AgentConfig
    agent = NBAgent(policy, tools=registry, config=AgentConfig(max_steps=6), store=Store("runs/a"))
    trajectories = agent.run(tasks)                 # sync, for notebooks
    async for traj in agent.stream(tasks): ...      # async, as they finish

The runner is the local executor behind a small interface (`stream(tasks)` yields finished
trajectories), so a remote pool of kernel workers can replace it without touching the agent,
the store or training.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from typing import Any, AsyncIterator, Iterable, Sequence

from workbench.agent.config import AgentConfig
from workbench.agent.episode import EpisodeEnv, run_episode
from workbench.kernel.sync import run_sync
from workbench.policies.base import Policy
from workbench.trajectory import Task, Trajectory


class NBAgent:
    """Runs NB-Agent episodes concurrently. Owns its kernel pool unless one is passed in."""

    def __init__(self, policy: Policy, *, tools: Any = None, config: AgentConfig | None = None,
                 store: Any = None, reward_spec: Any = None, pool: Any = None, run_id: str | None = None,
                 concurrency: int = 4, role: str = "solver", lineage: dict[str, Any] | None = None) -> None:
        from workbench.tools import ToolRegistry

        self.policy = policy
        self.tools = tools if tools is not None else ToolRegistry([])
        self.config = config or AgentConfig()
        self.store = store
        self.reward_spec = reward_spec
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.concurrency = concurrency
        self.role = role
        self.lineage = dict(lineage or {})
        self._pool = pool
        self._owns_pool = pool is None

    # -- pool ----------------------------------------------------------------------------------
    async def _ensure_pool(self) -> Any:
        if self._pool is None:
            from workbench.kernel import KernelPool

            self._pool = KernelPool(size=self.concurrency, profile=self.config.profile,
                                    isolation=self.config.isolation, output_cap=self.config.output_cap,
                                    startup_code="import workbench.runtime")
            await self._pool.start()
        return self._pool

    async def aclose(self) -> None:
        if self._pool is not None and self._owns_pool:
            await self._pool.close()
            self._pool = None

    # -- episodes ------------------------------------------------------------------------------
    async def run_one(self, task: Task, *, seed: int | None = None,
                      lineage: dict[str, Any] | None = None) -> Trajectory:
        """One episode in a fresh kernel; the trajectory is stored as soon as it ends."""
        from workbench.runtime import notepad_api_doc
        from workbench.tools import ToolGateway, setup_code

        pool = await self._ensure_pool()
        traj = Trajectory(task=task, run_id=self.run_id, role=self.role,
                          lineage={**self.lineage, **(lineage or {})})
        if "origin" in task.metadata:
            traj.lineage.setdefault("origin", task.metadata["origin"])
        try:
            async with pool.acquire() as kernel:
                token = secrets.token_hex(16)
                gateway = ToolGateway(self.tools, kernel.rollout_dir / "run" / "gateway.sock",
                                      rollout_id=traj.id, token=token,
                                      call_timeout_s=self.config.tool_timeout_s,
                                      call_budget=self.config.tool_call_budget)
                async with gateway:
                    code = setup_code(self.tools, token=token)
                    if self.config.task_variable:
                        code += f"{self.config.task_variable} = {task.question!r}\n"
                    setup = await kernel.execute(code, timeout=30)
                    if not setup.ok:
                        raise RuntimeError(f"runtime setup failed in the kernel: {setup.text}")
                    env = EpisodeEnv(kernel, gateway, self.tools.prompt_text(), notepad_api_doc())
                    traj = await run_episode(task, self.policy, env, self.config, trajectory=traj, seed=seed)
        except Exception as exc:  # pool or gateway failure: this episode ends, the batch goes on
            traj.termination = traj.termination or "error"
            traj.error = traj.error or f"{type(exc).__name__}: {exc}"
            traj.ended_at = time.time()
        self._score(traj)
        if self.store is not None:
            self.store.write(traj)
        return traj

    def _score(self, traj: Trajectory) -> None:
        if self.reward_spec is None:
            return
        try:
            traj.rewards = self.reward_spec.score(traj)
            traj.reward_spec = self.reward_spec.name
        except Exception as exc:  # a reward bug must not lose the trajectory
            traj.metadata["reward_error"] = f"{type(exc).__name__}: {exc}"

    async def stream(self, tasks: Iterable[Task], *, progress: bool = True) -> AsyncIterator[Trajectory]:
        """Yield trajectories as they finish; at most `concurrency` episodes run at once."""
        tasks = list(tasks)
        await self._ensure_pool()
        queue: asyncio.Queue[Trajectory] = asyncio.Queue()
        gate = asyncio.Semaphore(self.concurrency)
        base_seed = self.config.seed

        async def one(i: int, task: Task) -> None:
            async with gate:
                seed = None if base_seed is None else base_seed + i
                await queue.put(await self.run_one(task, seed=seed))

        workers = [asyncio.create_task(one(i, t)) for i, t in enumerate(tasks)]
        bar = _progress(len(tasks), progress)
        try:
            for _ in range(len(tasks)):
                traj = await queue.get()
                bar.update(1)
                bar.set_postfix_str(traj.termination)
                yield traj
        finally:
            bar.close()
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def arun(self, tasks: Sequence[Task], *, progress: bool = True) -> list[Trajectory]:
        """All trajectories, in the order of `tasks`."""
        order = {id(t): i for i, t in enumerate(tasks)}
        done = [traj async for traj in self.stream(tasks, progress=progress)]
        by_task = sorted(done, key=lambda tr: order.get(id(tr.task), 0))
        return by_task

    def run(self, tasks: Sequence[Task], *, progress: bool = True) -> list[Trajectory]:
        """Sync wrapper for notebooks and scripts (runs on workbench's background event loop, so it
        also works inside Jupyter); closes the pool it opened."""
        async def go() -> list[Trajectory]:
            try:
                return await self.arun(tasks, progress=progress)
            finally:
                await self.aclose()

        return run_sync(go())


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="episodes", unit="ep", disable=not enabled, leave=False)


__all__ = ["NBAgent", "run_sync"]
