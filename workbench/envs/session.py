"""One NB-Agent episode driven from outside, one cell at a time: what the OpenEnv and TRL adapters share.

    host = EpisodeHost(tools=registry, reward="em", agent=AgentConfig(max_steps=8), max_sessions=4)
    session = EpisodeSession(host, Task(id="t1", question="2 + 2?", golden_answers=["4"]))
    run_sync(session.open())                        # a kernel from the host's pool, tools, notepad, `task`
    run_sync(session.step(code="submit_final_answer(str(2 + 2))"))
    session.done, session.rewards                   # True, {"em": 1.0, "total": 1.0}
    run_sync(session.aclose())                      # the kernel goes back (and is discarded) at once

Every kernel call runs on workbench's background event loop (`workbench.kernel.sync`), whichever thread
or loop the adapter is called from: one pool serves every session of a host, as `LocalExecutor` does.
The session records a `Trajectory` as it goes, so a `RewardSpec` scores it exactly as it scores
workbench's own episodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.agent.config import AgentConfig
from workbench.agent.episode import NO_CODE_NOTE
from workbench.agent.episode_sandbox import LocalEpisodeSandbox, StepResult
from workbench.agent.executor import EpisodeJob
from workbench.agent.local import ToolSet, kernel_pool_for, open_episode_sandbox
from workbench.agent.parsing import parse_turn
from workbench.contracts import Scorer
from workbench.errors import ConfigError
from workbench.rewards.resolve import RewardFunction, resolve_reward
from workbench.trajectory import Step, Task, Trajectory

if TYPE_CHECKING:
    from workbench.kernel import AsyncKernelPool
    from workbench.tools import ToolRegistry


class EpisodeHost:
    """What every session of one environment shares: the agent config (sandbox profile, step budget,
    timeouts), the tools, the reward and one warm kernel pool of `max_sessions` kernels, started on
    first use. `tasks`: the questions `reset` picks from when it is given none (by seed, or in turn)."""

    def __init__(
        self,
        tools: ToolSet | None = None,
        reward: str | Scorer | RewardFunction | None = None,
        agent: AgentConfig | None = None,
        *,
        max_sessions: int = 4,
        tasks: Sequence[Task] = (),
    ) -> None:
        from workbench.tools import ToolRegistry

        if max_sessions < 1:
            raise ConfigError(f"max_sessions must be >= 1, got {max_sessions}")
        self.tools: ToolSet = ToolRegistry([]) if tools is None else tools
        self.scorer: Scorer | None = None if reward is None else resolve_reward(reward)
        self.agent = agent or AgentConfig()
        self.max_sessions = max_sessions
        self.tasks = list(tasks)
        self._pool: AsyncKernelPool | None = None
        self._lock: asyncio.Lock | None = None
        self._next_task = 0

    def registry_for(self, task: Task) -> ToolRegistry:
        from workbench.tools import ToolRegistry

        return self.tools if isinstance(self.tools, ToolRegistry) else self.tools(task)

    def pick_task(self, seed: int | None) -> Task:
        """The host's task for `seed` (seed modulo the count), or the next one in turn."""
        if not self.tasks:
            raise ConfigError("reset needs question=... (and answer=...), or give the environment tasks to pick from")
        if seed is None:
            seed, self._next_task = self._next_task, self._next_task + 1
        return self.tasks[seed % len(self.tasks)]

    async def pool(self) -> AsyncKernelPool:
        """The shared pool, started on first use (call on workbench's background loop)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._pool is None:
                pool = kernel_pool_for(self.agent, self.max_sessions)
                await pool.start()
                self._pool = pool
            return self._pool

    def stats(self) -> dict[str, int]:
        """The pool's kernels: `warm` (ready), `in_use` (held by open sessions), `started`."""
        pool = self._pool
        return {name: int(getattr(pool, name, 0)) for name in ("warm", "in_use", "started")}

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def close(self) -> None:
        """Close the kernel pool (sessions still open lose their kernels)."""
        from workbench.kernel.sync import run_sync

        run_sync(self.aclose())


class EpisodeSession:
    """One episode of `task` in a kernel of `host`'s pool: `open`, `step` until `done`, `aclose`."""

    def __init__(self, host: EpisodeHost, task: Task, episode_id: str | None = None) -> None:
        self.host, self.task = host, task
        self.trajectory = Trajectory(task=task)
        if episode_id:
            self.trajectory.id = episode_id
        self.trajectory.lineage["environment"] = "workbench.envs"
        self.env: LocalEpisodeSandbox | None = None
        self.rewards: dict[str, float] = {}
        self._stack = contextlib.AsyncExitStack()

    @property
    def steps_left(self) -> int:
        return max(0, self.host.agent.max_steps - len(self.trajectory.steps))

    @property
    def done(self) -> bool:
        return bool(self.trajectory.termination)

    async def open(self) -> LocalEpisodeSandbox:
        pool = await self.host.pool()
        job = EpisodeJob(task=self.task, agent=self.host.agent)
        registry = self.host.registry_for(self.task)
        self.env = await open_episode_sandbox(self._stack, pool, registry, job, self.trajectory.id)
        return self.env

    async def step(self, *, code: str | None = None, turn: str | None = None, timeout: float | None = None) -> Step:
        """Run one cell: `code` as is, or the code of a model `turn` parsed as workbench's loop parses it.
        Returns the recorded step; when the episode ends here, `done` and `rewards` are set."""
        if self.env is None:
            raise ConfigError("step() before reset(): reset the environment first")
        if self.done:
            raise ConfigError(f"the episode is over ({self.trajectory.termination}); reset() starts another")
        step = _new_step(len(self.trajectory.steps), code, turn)
        limit = self.host.agent.exec_timeout_s if timeout is None else min(timeout, self.host.agent.exec_timeout_s)
        started = time.monotonic()
        result = await self.env.step(step.code, limit)
        _record(step, result, time.monotonic() - started)
        self.trajectory.steps.append(step)
        self._end_if_over(result)
        return step

    def _end_if_over(self, result: StepResult) -> None:
        traj, obs = self.trajectory, result.observation
        if result.final_answer is not None:
            traj.final_answer, traj.termination = result.final_answer, "submitted"
        elif obs is not None and obs.kernel_died:
            traj.termination, traj.error = "kernel_died", obs.error_value or "kernel died"
        elif self.steps_left == 0:
            traj.termination = "max_steps"
        if traj.termination:
            traj.ended_at = time.time()
            self.score()

    def score(self) -> dict[str, float]:
        """The host's reward of the trajectory so far (empty without a reward), kept on the trajectory."""
        if self.host.scorer is not None:
            self.rewards = dict(self.host.scorer.score(self.trajectory))
            self.trajectory.rewards = dict(self.rewards)
            self.trajectory.reward_spec = getattr(self.host.scorer, "name", None)
        return self.rewards

    async def aclose(self) -> None:
        """Give the kernel back and stop the tools' gateway (idempotent)."""
        self.env = None
        await self._stack.aclose()


def _new_step(index: int, code: str | None, turn: str | None) -> Step:
    if (code is None) == (turn is None):
        raise ConfigError("a step carries either code=... (a cell) or turn=... (a model turn to parse), not both")
    if turn is None:
        return Step(index=index, raw=code or "", code=code)
    parsed = parse_turn(turn)
    return Step(index=index, raw=turn, think=parsed.think, code=parsed.code, format_flags=list(parsed.flags))


def _record(step: Step, result: StepResult, seconds: float) -> None:
    if result.observation is not None:
        step.observation = result.observation.to_dict()
        step.execute_s = seconds
    step.observation_text = NO_CODE_NOTE if result.observation is None else result.observation.text
    step.host_calls = list(result.host_calls)
    step.notepad = dict(result.notepad or {})


__all__ = ["EpisodeHost", "EpisodeSession"]
