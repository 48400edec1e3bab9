"""`RayExecutor`: the `Executor` seam over kernel workers on a Ray cluster.

    executor = RayExecutor({"default": ToolsSpec("workbench.resolve:load_search_tool",
                                                 corpus="/data/corpus.jsonl")},
                           mode="env", workers=2, kernels_per_worker=4, address="auto")
    trajectories = run_jobs(executor, make_jobs(tasks, config), policy, Recorder(store))

Two modes:
- `mode="env"`: the policy stays here (the trainer's live model); each step is one call to the
  worker that holds the episode's kernel and gateway, returning a `StepResult`.
- `mode="episode"`: whole episodes run on the workers against a policy they can reach (a
  `PolicySpec` / spec string such as "openai:http://host:8000/v1", or a picklable policy object).

The driver schedules: each job goes to the alive worker with the fewest episodes in flight, never
beyond its kernels. A worker that dies mid-batch is dropped; its episodes start again on another
worker, up to `retries` times, else come back with termination `worker_died`. The batch never
fails. Trajectories come back unscored and unwritten: the driver's `Recorder` writes the store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.agent.episode_sandbox import StepResult, ToolPrompt
from workbench.agent.executor import DEFAULT_TOOLS, EpisodeJob, TrajectoryStream, stream_as_done
from workbench.agent.recorder import describe
from workbench.cluster._ray import actor_died_errors, require_ray
from workbench.cluster.workers import RayWorkers, Worker
from workbench.errors import ConfigError
from workbench.trajectory import Trajectory

if TYPE_CHECKING:
    from ray import ObjectRef

    from workbench.cluster.spec import WorkerPolicy, WorkerTools
    from workbench.policies.base import Policy

MODES = ("env", "episode")


class WorkerLost(Exception):
    """The worker running an episode died (internal: the episode is retried or `worker_died`)."""


class RemoteEpisodeSandbox:
    """An `EpisodeSandbox` whose kernel and gateway live on a worker: one call per step."""

    def __init__(self, worker: Worker, env_id: str, prompt: ToolPrompt) -> None:
        self.worker, self.env_id, self._prompt = worker, env_id, prompt
        self.lost: BaseException | None = None

    @property
    def prompt(self) -> ToolPrompt:
        return self._prompt

    async def step(self, code: str | None, timeout: float) -> StepResult:
        try:
            return await self.worker.handle.step.remote(self.env_id, code, timeout)
        except actor_died_errors() as exc:
            self.lost = exc  # run_episode ends the episode; the executor sees why and retries it
            raise


class RayExecutor:
    """Episodes on Ray kernel workers; see the module docstring. Placement keywords go to
    `RayWorkers.start` (workers, kernels_per_worker, cpus_per_kernel, strategy, address, ...);
    `workers=` may also be started `RayWorkers` (then `tools` must be None: they carry theirs).
    `worker_policy` (episode mode): what the workers run with, whatever policy a batch is given
    (say `"openai:http://host:8000/v1"`, while the driver's front holds a client for the same server)."""

    def __init__(
        self,
        tools: WorkerTools | Mapping[str, WorkerTools] | None = None,
        *,
        mode: str = "env",
        workers: int | RayWorkers = 1,
        retries: int = 1,
        worker_policy: WorkerPolicy | str | None = None,
        **placement: Any,
    ) -> None:
        require_ray()  # without the extra: a ConfigError naming it, now rather than mid-run
        if mode not in MODES:
            raise ConfigError(
                f"mode must be 'env' (policy here, kernels on workers) or 'episode' "
                f"(whole episodes on workers), got {mode!r}"
            )
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries}")
        if worker_policy is not None and mode != "episode":
            raise ConfigError("worker_policy is what workers run whole episodes with: it needs mode='episode'")
        self.mode, self.retries, self.worker_policy = mode, retries, worker_policy
        self._workers: RayWorkers | None
        self._tools: dict[str, WorkerTools] = {}
        if isinstance(workers, RayWorkers):
            if tools is not None:
                raise ConfigError("started RayWorkers carry their own tool sets; pass tools=None")
            self._workers, self._owns = workers, False
            self.toolsets: tuple[str, ...] = tuple(workers.tools)
        else:
            from workbench.tools import ToolRegistry

            tools = ToolRegistry([]) if tools is None else tools
            self._tools = dict(tools) if isinstance(tools, Mapping) else {DEFAULT_TOOLS: tools}
            self.toolsets = tuple(self._tools)
            self._workers, self._owns = None, True
            self._placement = {"workers": workers, **placement}
        self._rooms: dict[asyncio.AbstractEventLoop, asyncio.Condition] = {}  # one per loop streaming
        self.started = self.finished = self.in_flight = self.high_water = 0
        self.retried = self.worker_died = 0

    # -- workers -------------------------------------------------------------------------------
    @property
    def workers(self) -> RayWorkers:
        """The workers (started on first use)."""
        if self._workers is None:
            self._workers = RayWorkers.start(self._tools, **self._placement)
        return self._workers

    def start(self) -> RayExecutor:
        """Place and warm the workers now (else the first batch does)."""
        _ = self.workers
        return self

    # -- episodes ------------------------------------------------------------------------------
    async def stream(self, jobs: Sequence[EpisodeJob], policy: Policy) -> TrajectoryStream:
        """Yield `(index, trajectory)` as episodes end, exactly one per job."""
        jobs = list(jobs)
        for name in {job.tools for job in jobs} - set(self.toolsets) if self.toolsets else ():
            raise ConfigError(f"no tool set {name!r} in this executor (it has {sorted(self.toolsets)})")
        pool = self.workers if self._workers is not None else await asyncio.to_thread(lambda: self.workers)
        remote_policy: ObjectRef | None = None
        if self.mode == "episode":
            from workbench.cluster.spec import policy_for_workers

            chosen = self.worker_policy if self.worker_policy is not None else policy
            remote_policy = require_ray().put(policy_for_workers(chosen))

        async def run(job: EpisodeJob) -> Trajectory:
            self.started += 1
            try:
                return await self._with_retries(pool, job, policy, remote_policy)
            finally:
                self.finished += 1

        async for done in stream_as_done(jobs, run):
            yield done

    async def _with_retries(
        self, pool: RayWorkers, job: EpisodeJob, policy: Policy, remote_policy: ObjectRef | None
    ) -> Trajectory:
        lost: list[str] = []
        wire_job = dataclasses.replace(job, reward_spec=None)  # scoring is the driver's
        worker_gone: tuple[type[BaseException], ...] = (WorkerLost, *actor_died_errors())
        while True:
            worker = await self._take(pool)
            if worker is None:
                dead = ", ".join(w.name for w in pool.workers)
                return self._died(job, lost, f"no worker is left alive; dead: {dead}")
            try:
                if self.mode == "env":
                    return await self._env_episode(worker, wire_job, job, policy)
                row = await worker.handle.run.remote(wire_job, remote_policy)
                return Trajectory.from_dict(row)
            except worker_gone as exc:
                worker.alive = False
                lost.append(f"{worker.name} on node {str(worker.info.get('node', '?'))[:12]}: {describe(exc)}")
                if len(lost) > self.retries:
                    return self._died(job, lost, f"retried {self.retries} time(s)")
                self.retried += 1
            except Exception as exc:  # the worker is fine; this episode failed to open or run
                traj = job.trajectory()
                traj.lineage["worker"] = worker.lineage()
                traj.termination, traj.error, traj.ended_at = "error", describe(exc), time.time()
                return traj
            finally:
                await self._give(worker)

    async def _env_episode(self, worker: Worker, wire_job: EpisodeJob, job: EpisodeJob, policy: Policy) -> Trajectory:
        from workbench.agent.episode import run_episode

        prompt = await worker.handle.open.remote(wire_job)
        env = RemoteEpisodeSandbox(worker, job.id, prompt)
        traj = job.trajectory()
        traj.lineage["worker"] = worker.lineage()
        try:
            traj = await run_episode(job.task, policy, env, job.agent, trajectory=traj, seed=job.seed)
        finally:
            if env.lost is None:
                try:
                    await worker.handle.close.remote(job.id)
                except actor_died_errors():
                    worker.alive = False  # gone after the episode ended: the trajectory is whole
        if env.lost is not None:
            raise WorkerLost(describe(env.lost))
        return traj

    def _died(self, job: EpisodeJob, lost: list[str], why: str) -> Trajectory:
        self.worker_died += 1
        traj = job.trajectory()
        traj.termination = "worker_died"
        traj.error = f"the worker running this episode died ({why})" + "".join(f"; {x}" for x in lost)
        traj.ended_at = time.time()
        return traj

    def _room(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._rooms if lp.is_closed()]:
            del self._rooms[old]
        return self._rooms.setdefault(loop, asyncio.Condition())

    async def _take(self, pool: RayWorkers) -> Worker | None:
        """The alive worker with the fewest episodes in flight and a free kernel (waits for one);
        None when no worker is alive."""
        room = self._room()
        async with room:
            while True:
                alive = pool.alive
                if not alive:
                    return None
                free = [w for w in alive if w.in_flight < pool.kernels_per_worker]
                if free:
                    worker = min(free, key=lambda w: (w.in_flight, w.index))
                    worker.in_flight += 1
                    worker.high_water = max(worker.high_water, worker.in_flight)
                    self.in_flight += 1
                    self.high_water = max(self.high_water, self.in_flight)
                    return worker
                try:  # woken when a kernel frees here; re-checked each second for one freed by another loop
                    await asyncio.wait_for(room.wait(), 1.0)
                except TimeoutError:
                    pass

    async def _give(self, worker: Worker) -> None:
        room = self._room()
        async with room:
            worker.in_flight -= 1
            self.in_flight -= 1
            room.notify_all()

    # -- lifetime ------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Episodes started and finished, in flight on a worker now and at most (`high_water`, never
        above the workers' kernels), retries, `worker_died`, and `workers`: each worker's own figures."""
        counts = {
            "started": self.started,
            "finished": self.finished,
            "in_flight": self.in_flight,
            "high_water": self.high_water,
            "retried": self.retried,
            "worker_died": self.worker_died,
        }
        return {**counts, "workers": self._workers.stats() if self._workers is not None else []}

    async def aclose(self) -> None:
        """Close the workers this executor started (started `RayWorkers` passed in stay up)."""
        if self._owns and self._workers is not None:
            workers, self._workers = self._workers, None
            await asyncio.to_thread(workers.shutdown)

    def close(self) -> None:
        from workbench.kernel.sync import run_sync

        run_sync(self.aclose())

    async def __aenter__(self) -> RayExecutor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["MODES", "RayExecutor", "RemoteEpisodeSandbox"]
