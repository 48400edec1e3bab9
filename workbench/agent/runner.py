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
import contextlib
import json
import logging
import secrets
import time
import uuid
from typing import Any, AsyncIterator, Iterable, Sequence

from workbench.agent.config import AgentConfig, policy_settings, with_model_settings
from workbench.agent.episode import EpisodeEnv, run_episode
from workbench.kernel.sync import run_sync
from workbench.policies.base import Policy
from workbench.safetext import safe_text
from workbench.store import safe_trajectory
from workbench.trajectory import Task, Trajectory

log = logging.getLogger(__name__)


class NBAgent:
    """Runs NB-Agent episodes concurrently. Owns its kernel pool unless one is passed in."""

    def __init__(self, policy: Policy, *, tools: Any = None, config: AgentConfig | None = None,
                 store: Any = None, reward_spec: Any = None, pool: Any = None, run_id: str | None = None,
                 concurrency: int = 4, role: str = "solver", lineage: dict[str, Any] | None = None) -> None:
        from workbench.tools import ToolRegistry

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
        """One episode in a fresh kernel; the trajectory is stored as soon as it ends.

        Never raises for an episode's failure: a kernel, gateway, reward or store failure ends up
        in the returned trajectory (`termination`, `error`, `metadata`)."""
        traj = Trajectory(task=task, run_id=self.run_id, role=self.role,
                          lineage={**self.lineage, **(lineage or {})})
        try:
            if "origin" in task.metadata:
                traj.lineage.setdefault("origin", task.metadata["origin"])
            traj = await self._episode(task, traj, seed)
        except Exception as exc:  # pool or gateway failure: this episode ends, the batch goes on
            traj.termination = traj.termination or "error"
            traj.error = traj.error or describe(exc)
            traj.ended_at = time.time()
        return self._finish(traj)

    async def _episode(self, task: Task, traj: Trajectory, seed: int | None) -> Trajectory:
        from workbench.runtime import notepad_api_doc
        from workbench.tools import ToolGateway, setup_code

        pool = await self._ensure_pool()
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
                return await run_episode(task, self.policy, env, self.config, trajectory=traj, seed=seed)

    def _finish(self, traj: Trajectory) -> Trajectory:
        """Sanitise, score and store an ended episode; whatever fails is recorded, never raised."""
        try:
            traj = safe_trajectory(traj)
        except Exception as exc:  # a value to_dict() cannot copy: left as it is, the store says why
            note(traj, "sanitize_error", describe(exc))
        self._score(traj)
        if self.store is not None:
            store_trajectory(self.store, traj)
        return traj

    def _score(self, traj: Trajectory) -> None:
        if self.reward_spec is None:
            return
        try:
            traj.rewards = self.reward_spec.score(traj)
            traj.reward_spec = self.reward_spec.name
        except Exception as exc:  # a reward bug must not lose the trajectory
            note(traj, "reward_error", describe(exc))

    async def stream(self, tasks: Iterable[Task], *, progress: bool = True) -> AsyncIterator[Trajectory]:
        """Yield trajectories as they finish; at most `concurrency` episodes run at once.

        Every task yields exactly one trajectory, so the stream always ends."""
        async with contextlib.aclosing(self._stream(list(tasks), progress)) as pairs:
            async for _, traj in pairs:
                yield traj

    async def _stream(self, tasks: list[Task], progress: bool) -> AsyncIterator[tuple[int, Trajectory]]:
        await self._ensure_pool()
        queue: asyncio.Queue[tuple[int, Trajectory]] = asyncio.Queue()
        gate = asyncio.Semaphore(self.concurrency)
        base_seed = self.config.seed

        async def one(i: int, task: Task) -> None:
            async with gate:
                seed = None if base_seed is None else base_seed + i
                try:
                    traj = await self.run_one(task, seed=seed)
                except Exception as exc:  # run_one records its failures; this is the last guard
                    traj = Trajectory(task=task, run_id=self.run_id, role=self.role,
                                      termination="error", error=describe(exc), ended_at=time.time())
                    if self.store is not None:
                        store_trajectory(self.store, traj)
                await queue.put((i, traj))

        workers = [asyncio.create_task(one(i, t)) for i, t in enumerate(tasks)]
        bar = _progress(len(tasks), progress)
        try:
            for _ in range(len(tasks)):
                i, traj = await queue.get()
                bar.update(1)
                bar.set_postfix_str(traj.termination)
                yield i, traj
        finally:
            bar.close()
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def arun(self, tasks: Sequence[Task], *, progress: bool = True) -> list[Trajectory]:
        """All trajectories, in the order of `tasks`."""
        done = [pair async for pair in self._stream(list(tasks), progress)]
        return [traj for _, traj in sorted(done, key=lambda pair: pair[0])]

    def run(self, tasks: Sequence[Task], *, progress: bool = True) -> list[Trajectory]:
        """Sync wrapper for notebooks and scripts (runs on workbench's background event loop, so it
        also works inside Jupyter); closes the pool it opened."""
        async def go() -> list[Trajectory]:
            try:
                return await self.arun(tasks, progress=progress)
            finally:
                await self.aclose()

        return run_sync(go())


def describe(exc: BaseException) -> str:
    """`Type: message`, even for an exception whose `__str__` fails."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001
        return f"{type(exc).__name__}: (its message could not be rendered)"


def note(traj: Trajectory, key: str, value: Any) -> None:
    """Record a failure in `traj.metadata` (replacing metadata that is not a dict)."""
    if not isinstance(traj.metadata, dict):
        traj.metadata = {"metadata_repr": safe_text(repr(traj.metadata))}
    traj.metadata[key] = value


def store_trajectory(store: Any, traj: Trajectory) -> bool:
    """Write `traj`; never raises. True when it was stored as it is.

    When the write fails, the episode is recorded as an error with the reason (in `traj`), and
    the store gets a copy whose values JSON cannot hold are written as their repr, else a minimal
    one (task, ids, termination, final answer, error), so the batch never loses the episode."""
    try:
        store.write(traj)
        return True
    except Exception as exc:  # noqa: BLE001 - a store failure must not end the batch
        reason = describe(exc)
    log.warning("trajectory %s could not be stored as it is (%s); storing a reduced copy",
                traj.id, reason)
    note(traj, "store_error", reason)
    if traj.termination != "error":
        note(traj, "termination_before_store_error", traj.termination)
    traj.termination = "error"
    traj.error = f"{traj.error}\n" if traj.error else ""
    traj.error += f"the store could not write this trajectory as it is: {reason}"
    for reduce in (_repr_copy, _minimal_copy):
        try:
            store.write(reduce(traj))
            return False
        except Exception as exc:  # noqa: BLE001
            note(traj, "store_error", f"{reason}; reduced copy: {describe(exc)}")
    log.error("trajectory %s could not be stored at all: %s", traj.id, traj.metadata["store_error"])
    return False


def _repr_copy(traj: Trajectory) -> Trajectory:
    """`traj` with every value JSON cannot hold replaced by its repr."""
    return Trajectory.from_dict(json.loads(json.dumps(traj.to_dict(), default=repr)))


def _minimal_copy(traj: Trajectory) -> Trajectory:
    """Only plain fields, each forced to text: what is left when the full trajectory will not go."""
    def text(value: Any) -> str | None:
        return None if value is None else safe_text(value if isinstance(value, str) else repr(value))

    task = Task(id=text(traj.task.id) or "", question=text(traj.task.question) or "")
    return Trajectory(task=task, id=text(traj.id) or uuid.uuid4().hex, run_id=text(traj.run_id) or "",
                      role=text(traj.role) or "", final_answer=text(traj.final_answer),
                      termination="error", error=text(traj.error),
                      metadata={"minimal": True, "store_error": text(traj.metadata.get("store_error"))
                                if isinstance(traj.metadata, dict) else None},
                      started_at=_number(traj.started_at), ended_at=_number(traj.ended_at))


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return time.time()


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="episodes", unit="ep", disable=not enabled, leave=False)


__all__ = ["NBAgent", "run_sync"]
