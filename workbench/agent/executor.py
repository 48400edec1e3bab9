"""The executor seam: episode jobs in, trajectories out, wherever the kernels live.

    executor = LocalExecutor({"default": tools}, concurrency=4)       # workbench.agent.local
    jobs = make_jobs(tasks, config, role="solver", reward_spec=em)
    trajectories = run_jobs(executor, jobs, policy, Recorder(store))  # in order; each recorded once

An `Executor` runs `EpisodeJob`s with a policy and streams each trajectory back as it ends, as
`(job index, trajectory)`. It never scores and never writes: the driver's `Recorder` does both,
once per trajectory (see `workbench.agent.recorder`). A job is plain picklable data (task, role,
agent config, the name of a tool set, reward spec, seed, run id, lineage); tools themselves are
the executor's (built where the kernels run: secrets never travel in a job).

How a remote executor implements it (e.g. on Ray), in one of two ways:

1. Policy in the driver, environments remote. A worker owns a kernel pool and the tool gateways of
   the rollouts it hosts, and exposes "open an environment for this job" / "step" / "close". The
   driver runs `run_episode(job.task, policy, env, job.agent, trajectory=job.trajectory(),
   seed=job.seed)` with `env` a proxy whose `step(code, timeout)` is one remote call returning a
   `StepResult` and whose `prompt` is fetched once when the environment opens. This suits a live
   model that must stay in the driver (the trainer's, on CPU).
2. Whole episodes remote. The worker runs `run_episode` itself, against a policy reachable from
   there (an `OpenAIPolicy` on `workbench serve-model` or `vllm serve`), and returns the finished
   `Trajectory` (`to_dict()` is its wire form).

Either way: yield one trajectory per job, even when the episode fails (`termination` and `error`
say why; a worker lost mid-episode may retry the job elsewhere before giving up), keep at most the
executor's capacity in flight, release everything in `aclose()`, and report counts in `stats()`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Protocol,
    runtime_checkable,
)

from workbench.agent.config import AgentConfig, policy_settings, with_model_settings
from workbench.agent.recorder import Scorer
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.recorder import Recorder
    from workbench.policies.base import Policy

DEFAULT_TOOLS = "default"
TrajectoryStream = AsyncGenerator[tuple[int, Trajectory], None]  # (job index, trajectory) as each ends


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run: plain data, picklable, the same for every executor."""

    task: Task
    agent: AgentConfig
    role: str = "solver"
    tools: str = DEFAULT_TOOLS  # which of the executor's tool sets the episode gets
    reward_spec: Scorer | None = None  # what the driver's Recorder scores the trajectory with (None: unscored)
    seed: int | None = None  # sampling seed of the episode (turn i: seed * TURN_SEED_STRIDE + i, agent.episode)
    run_id: str = ""
    parent: str | None = None  # the trajectory this one continues, if any (lineage["parent"])
    lineage: Mapping[str, Any] = field(default_factory=dict)  # iteration, phase, ...
    id: str = field(default_factory=lambda: uuid.uuid4().hex)  # the trajectory's id

    def trajectory(self) -> Trajectory:
        """The empty trajectory this job's episode fills (call it when the episode starts)."""
        lineage = dict(self.lineage)
        if self.parent is not None:
            lineage.setdefault("parent", self.parent)
        if isinstance(self.task.metadata, dict) and "origin" in self.task.metadata:
            lineage.setdefault("origin", self.task.metadata["origin"])
        return Trajectory(task=self.task, id=self.id, run_id=self.run_id, role=self.role, lineage=lineage)


@runtime_checkable
class Executor(Protocol):
    """Runs episode jobs with a policy; see the module docstring."""

    def stream(self, jobs: Sequence[EpisodeJob], policy: Policy) -> TrajectoryStream:
        """Yield `(index into jobs, trajectory)` as each episode ends; exactly one per job. An async
        generator: a consumer that stops early closes it (`aclose()`), which ends the rest."""
        ...

    async def aclose(self) -> None:
        """Release kernels, gateways and workers. The executor may not be used afterwards."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counts: at least `started`, `finished`, `in_flight`, `high_water` (episodes)."""
        ...


def config_for(policy: Policy, config: AgentConfig | None) -> AgentConfig:
    """`config` completed with the agent settings the policy's model carries (explicit fields win)."""
    return with_model_settings(config, policy_settings(policy))[0]


def make_jobs(
    tasks: Iterable[Task],
    config: AgentConfig,
    *,
    role: str = "solver",
    tools: str = DEFAULT_TOOLS,
    reward_spec: Scorer | None = None,
    run_id: str = "",
    lineage: Mapping[str, Any] | None = None,
) -> list[EpisodeJob]:
    """One job per task; episode i samples with seed `config.seed + i` (unseeded without one)."""
    base = config.seed
    return [
        EpisodeJob(
            task=task,
            agent=config,
            role=role,
            tools=tools,
            reward_spec=reward_spec,
            seed=None if base is None else base + i,
            run_id=run_id,
            lineage=dict(lineage or {}),
        )
        for i, task in enumerate(tasks)
    ]


async def stream_as_done(
    jobs: Sequence[EpisodeJob], run: Callable[[EpisodeJob], Awaitable[Trajectory]]
) -> TrajectoryStream:
    """Start `run(job)` for every job; yield `(index, trajectory)` as each ends, exactly one per job
    (an exception becomes an error trajectory). Leaving the loop early cancels the rest."""
    from workbench.agent.recorder import describe

    queue: asyncio.Queue[tuple[int, Trajectory]] = asyncio.Queue()

    async def one(i: int, job: EpisodeJob) -> None:
        try:
            traj = await run(job)
        except Exception as exc:  # the last guard: one trajectory per job, always
            traj = job.trajectory()
            traj.termination, traj.error, traj.ended_at = "error", describe(exc), time.time()
        await queue.put((i, traj))

    tasks = [asyncio.create_task(one(i, job)) for i, job in enumerate(jobs)]
    try:
        for _ in range(len(jobs)):
            yield await queue.get()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def stream_recorded(
    executor: Executor,
    jobs: Sequence[EpisodeJob],
    policy: Policy,
    recorder: Recorder | None = None,
    *,
    progress: bool = False,
) -> TrajectoryStream:
    """`executor.stream`, each trajectory made safe text and recorded (scored with its job's spec,
    written) as it ends."""
    import contextlib

    from workbench.agent.recorder import sanitized

    bar = _progress(len(jobs), progress)
    try:
        async with contextlib.aclosing(executor.stream(jobs, policy)) as pairs:
            async for i, traj in pairs:
                traj = sanitized(traj)  # what every consumer (scorers, the trainer) sees
                if recorder is not None:
                    traj = recorder.record(traj, jobs[i].reward_spec)
                bar.update(1)
                bar.set_postfix_str(str(traj.termination))
                yield i, traj
    finally:
        bar.close()


async def gather_jobs(
    executor: Executor,
    jobs: Sequence[EpisodeJob],
    policy: Policy,
    recorder: Recorder | None = None,
    *,
    progress: bool = False,
) -> list[Trajectory]:
    """Every job's trajectory, in the order of `jobs`, each recorded as it ended."""
    done: list[Trajectory | None] = [None] * len(jobs)
    async for i, traj in stream_recorded(executor, jobs, policy, recorder, progress=progress):
        done[i] = traj
    missing = [jobs[i].task.id for i, t in enumerate(done) if t is None]
    if missing:
        raise RuntimeError(
            f"the executor returned no trajectory for task(s) {missing[:5]}; an executor must yield exactly one per job"
        )
    return done  # type: ignore[return-value]


def run_jobs(
    executor: Executor,
    jobs: Sequence[EpisodeJob],
    policy: Policy,
    recorder: Recorder | None = None,
    *,
    progress: bool = False,
) -> list[Trajectory]:
    """Sync `gather_jobs` (on workbench's background event loop, so it also works inside Jupyter)."""
    from workbench.kernel.sync import run_sync

    return run_sync(gather_jobs(executor, jobs, policy, recorder, progress=progress))


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="episodes", unit="ep", disable=not enabled, leave=False)


__all__ = [
    "DEFAULT_TOOLS",
    "EpisodeJob",
    "Executor",
    "TrajectoryStream",
    "config_for",
    "gather_jobs",
    "make_jobs",
    "run_jobs",
    "stream_recorded",
]
