"""`NBAgent`: the notebook front over an executor. Many episodes at once, each recorded (scored,
written to the store) the moment it ends.

    from workbench import NBAgent, AgentConfig
    agent = NBAgent(policy, tools=registry, config=AgentConfig(max_steps=6), store=Store("runs/a"))
    trajectories = agent.run(tasks)                 # sync, for notebooks
    async for traj in agent.stream(tasks): ...      # async, as they finish

Episodes run on an `Executor` (`workbench.agent.executor`): by default a `LocalExecutor` with this
agent's tools and kernel pool; pass `executor=` to run them elsewhere (its tools are its own).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.agent.config import AgentConfig, policy_settings, with_model_settings
from workbench.agent.executor import EpisodeJob, Executor, gather_jobs, make_jobs, stream_recorded
from workbench.agent.recorder import Recorder, describe, note, store_trajectory
from workbench.contracts import Scorer, TrajectoryStore
from workbench.errors import ConfigError
from workbench.kernel.sync import run_sync
from workbench.policies.base import Policy
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.local import ToolSet
    from workbench.kernel import AsyncKernelPool


class NBAgent:
    """Runs NB-Agent episodes concurrently with one policy. Owns its executor unless one is passed in
    (`pool=`: a started kernel pool for the executor it builds)."""

    def __init__(
        self,
        policy: Policy,
        *,
        tools: ToolSet | None = None,
        config: AgentConfig | None = None,
        store: TrajectoryStore | None = None,
        reward_spec: Scorer | None = None,
        pool: AsyncKernelPool | None = None,
        run_id: str | None = None,
        concurrency: int = 4,
        role: str = "solver",
        lineage: dict[str, Any] | None = None,
        executor: Executor | None = None,
    ) -> None:
        from workbench.agent.local import LocalExecutor
        from workbench.tools import ToolRegistry

        if executor is not None and (tools is not None or pool is not None):
            raise ConfigError("NBAgent: pass tools= and pool= to the executor you pass as executor=, not here")
        self.policy = policy
        self.tools = tools if tools is not None else ToolRegistry([])
        # fields the caller did not set come from the agent settings the policy's model was trained with
        self.config, self.settings_from_model = with_model_settings(config, policy_settings(policy))
        self.store = store
        self.reward_spec = reward_spec
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.concurrency = concurrency
        self.role = role
        self.lineage = dict(lineage or {})
        self.recorder = Recorder(store)
        self._owns_executor = executor is None
        self.executor: Executor = executor or LocalExecutor(self.tools, concurrency=concurrency, pool=pool)

    def jobs(self, tasks: Iterable[Task], lineage: dict[str, Any] | None = None) -> list[EpisodeJob]:
        """This agent's episode jobs for `tasks` (episode i seeded with `config.seed + i`)."""
        return make_jobs(
            tasks,
            self.config,
            role=self.role,
            reward_spec=self.reward_spec,
            run_id=self.run_id,
            lineage={**self.lineage, **(lineage or {})},
        )

    async def aclose(self) -> None:
        """Release the kernels of the executor this agent built (one passed in stays open)."""
        if self._owns_executor:
            await self.executor.aclose()

    # -- episodes ------------------------------------------------------------------------------
    async def run_one(
        self, task: Task, *, seed: int | None = None, lineage: dict[str, Any] | None = None
    ) -> Trajectory:
        """One episode in a fresh kernel; the trajectory is recorded as soon as it ends. Never raises
        for an episode's failure (`termination`, `error`, `metadata` say what went wrong)."""
        [job] = self.jobs([task], lineage)
        job = dataclasses.replace(job, seed=seed)
        try:
            [traj] = await gather_jobs(self.executor, [job], self.policy, self.recorder)
        except Exception as exc:  # no sandbox to run in (a pool that cannot start): recorded, not raised
            traj = job.trajectory()
            traj.termination, traj.error, traj.ended_at = "error", describe(exc), time.time()
            traj = self.recorder.record(traj, job.reward_spec)
        return traj

    async def stream(self, tasks: Iterable[Task], *, progress: bool = True) -> AsyncIterator[Trajectory]:
        """Yield trajectories as they finish; every task yields exactly one, so the stream ends."""
        jobs = self.jobs(tasks)
        async with contextlib.aclosing(
            stream_recorded(self.executor, jobs, self.policy, self.recorder, progress=progress)
        ) as pairs:
            async for _, traj in pairs:
                yield traj

    async def arun(self, tasks: Sequence[Task], *, progress: bool = True) -> list[Trajectory]:
        """All trajectories, in the order of `tasks`."""
        return await gather_jobs(self.executor, self.jobs(tasks), self.policy, self.recorder, progress=progress)

    def run(self, tasks: Sequence[Task], *, progress: bool = True) -> list[Trajectory]:
        """Sync wrapper for notebooks and scripts (runs on workbench's background event loop, so it
        also works inside Jupyter); closes the kernels it opened."""

        async def go() -> list[Trajectory]:
            try:
                return await self.arun(tasks, progress=progress)
            finally:
                await self.aclose()

        return run_sync(go())


__all__ = ["NBAgent", "describe", "note", "run_sync", "store_trajectory"]
