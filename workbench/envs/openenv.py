"""NB-Agent as an OpenEnv environment (PyPI `openenv-core` 0.3).

    from workbench.envs.openenv import NBAgentAction, NBAgentEnvironment
    env = NBAgentEnvironment(EpisodeHost(reward="em"))
    obs = env.reset(question="What is 6 * 7?", answer="42")     # obs.task, obs.tools, obs.notepad_api
    obs = env.step(NBAgentAction(code="x = 6 * 7\\nx"))           # obs.output == "42"
    obs = env.step(NBAgentAction(turn="<think>done</think><code>submit_final_answer(str(x))</code>"))
    obs.done, obs.reward                                       # True, 1.0
    env.close()                                                # the kernel goes back

`reset` takes a sandboxed kernel from the host's pool and sets up the task (the `task` variable, the
tools, the notepad); `step` runs one cell and returns its output, the tool calls, the notepad and the
budget left, with `done` and, when done, the host's reward (its components in `rewards`). Sessions
are independent: a served environment holds one instance per client (`SUPPORTS_CONCURRENT_SESSIONS`).
Serve it with `workbench serve-env` or `EnvServer` (`workbench.envs.server`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from typing import Any, TypeVar

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from workbench.envs.session import EpisodeHost, EpisodeSession
from workbench.errors import ConfigError
from workbench.kernel.observation import Observation as KernelObservation
from workbench.kernel.sync import background_loop, run_sync
from workbench.trajectory import Step, Task

T = TypeVar("T")

_CODE_OR_TURN = (
    'an NBAgentAction carries either code or turn, not both and not neither: send {"code": "..."} to run '
    'Python as is, or {"turn": "<think>...</think><code>...</code>"} to run a model turn\'s code'
)
_NO_EPISODE = (
    "step() before reset(): reset the environment first (served, an episode lives in one WebSocket session: "
    "OpenEnv's HTTP /step builds a fresh environment per request, so step over /ws with NBAgentClient or "
    "OpenEnv's GenericEnvClient)"
)


class NBAgentAction(Action):  # type: ignore[misc]  # openenv-core ships no type information: its classes are Any
    """One cell: `code` to run as is, or a full model `turn` (`<think>…</think><code>…</code>`) parsed
    the way workbench's loop parses a turn (its format flags come back in the observation)."""

    code: str | None = Field(default=None, description="Python to run in the episode's kernel")
    turn: str | None = Field(default=None, description="a model turn whose <code> block runs")

    @model_validator(mode="after")
    def _one_of(self) -> NBAgentAction:
        if (self.code is None) == (self.turn is None):
            # a PydanticCustomError, not a ValueError: the error's context then holds no exception object,
            # so OpenEnv's server can send the refusal to its client as JSON
            raise PydanticCustomError("code_or_turn", _CODE_OR_TURN)
        return self


class NBAgentObservation(Observation):  # type: ignore[misc]
    """What the agent sees: on reset the task and the tools; after a step the cell's output."""

    task: str = Field(default="", description="the question (also the kernel's `task` variable)")
    tools: list[str] = Field(default_factory=list, description="host tools callable in the kernel")
    tools_text: str = Field(default="", description="the tools' signatures and docs (reset only)")
    notepad_api: str = Field(default="", description="the notepad's API (reset only)")
    output: str = Field(default="", description="the cell's output as the model sees it")
    ok: bool = Field(default=True, description="the cell ran without an error, timeout or kernel death")
    format_flags: list[str] = Field(default_factory=list, description="a turn's format problems")
    host_calls: list[dict[str, Any]] = Field(
        default_factory=list, description="host calls during the step (the kernel's calls of host tools)"
    )
    notepad: dict[str, Any] = Field(default_factory=dict, description="the notepad after the step")
    final_answer: str | None = Field(default=None, description="the submitted answer, once there is one")
    steps_left: int = Field(default=0, description="cells left in the episode's budget")
    termination: str = Field(default="", description="why the episode ended ('' while it runs)")
    rewards: dict[str, float] = Field(default_factory=dict, description="reward components when done")


class NBAgentState(State):  # type: ignore[misc]
    """The episode: its task, answer, termination and rewards so far."""

    question: str = ""
    final_answer: str | None = None
    termination: str = ""
    rewards: dict[str, float] = Field(default_factory=dict)


class NBAgentEnvironment(Environment[NBAgentAction, NBAgentObservation, NBAgentState]):  # type: ignore[misc]
    """See the module docstring. `host`: the tools, reward, agent config and kernel pool shared by
    every instance made from it (a fresh default host when none is given)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, host: EpisodeHost | None = None) -> None:
        super().__init__()
        self.host = host or EpisodeHost()
        self.session: EpisodeSession | None = None

    # -- sync (notebooks, OpenEnv's thread pool) and async (OpenEnv's event loop) -------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None, **task: Any) -> NBAgentObservation:
        """Start an episode: `question=` (with `answer=` or `golden_answers=`, `id=`), or one of the
        host's tasks picked by `seed`. A session still open is closed first."""
        return run_sync(self._reset(seed, episode_id, task))

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **task: Any
    ) -> NBAgentObservation:
        return await _on_kernel_loop(self._reset(seed, episode_id, task))

    def step(self, action: NBAgentAction, timeout_s: float | None = None, **kwargs: Any) -> NBAgentObservation:
        """Run the action's cell (within `timeout_s` and the agent config's exec timeout)."""
        return run_sync(self._step(action, timeout_s))

    async def step_async(
        self, action: NBAgentAction, timeout_s: float | None = None, **kwargs: Any
    ) -> NBAgentObservation:
        return await _on_kernel_loop(self._step(action, timeout_s))

    def close(self) -> None:
        """Give the episode's kernel back (the host's pool stays open for other sessions)."""
        session, self.session = self.session, None
        if session is not None:
            run_sync(session.aclose())

    @property
    def state(self) -> NBAgentState:
        session = self.session
        if session is None:
            return NBAgentState()
        traj = session.trajectory
        return NBAgentState(
            episode_id=traj.id,
            step_count=len(traj.steps),
            question=traj.task.question,
            final_answer=traj.final_answer,
            termination=traj.termination,
            rewards=dict(session.rewards),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="nb-agent",
            description="workbench's NB-Agent: one bubblewrap-sandboxed Jupyter kernel per episode, "
            "a notepad and host tools; each step runs one cell",
            version="1.0.0",
        )

    # -- the work, on workbench's kernel loop --------------------------------------------------
    async def _reset(self, seed: int | None, episode_id: str | None, fields: dict[str, Any]) -> NBAgentObservation:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError(f"reset(seed={seed!r}): the seed is an int (it picks one of the host's tasks) or None")
        if self.session is not None:
            old, self.session = self.session, None
            await old.aclose()
        task = _task_from(fields, episode_id) if fields else self.host.pick_task(seed)
        session = EpisodeSession(self.host, task, episode_id)
        try:
            env = await session.open()
        except BaseException:
            await session.aclose()
            raise
        self.session = session
        prompt = env.prompt
        return NBAgentObservation(
            task=task.question,
            tools=list(prompt.tool_names),
            tools_text=prompt.tools_text,
            notepad_api=prompt.notepad_api,
            steps_left=session.steps_left,
        )

    async def _step(self, action: NBAgentAction, timeout_s: float | None) -> NBAgentObservation:
        if self.session is None:
            raise ConfigError(_NO_EPISODE)
        session = self.session
        step = await session.step(code=action.code, turn=action.turn, timeout=timeout_s)
        return _observation(session, step)


def _task_from(fields: dict[str, Any], episode_id: str | None) -> Task:
    row = dict(fields)
    if "answer" in row:
        row.setdefault("golden_answers", row.pop("answer"))
    if episode_id and "id" not in row:
        row["id"] = episode_id
    return Task.from_dict(row)


def _observation(session: EpisodeSession, step: Step) -> NBAgentObservation:
    traj = session.trajectory
    ran = None if step.observation is None else KernelObservation.from_dict(step.observation)
    total = session.rewards.get("total")
    return NBAgentObservation(
        task=traj.task.question,
        output=step.observation_text,
        ok=ran.ok if ran is not None else step.code is None,
        format_flags=list(step.format_flags),
        host_calls=[dataclasses.asdict(call) for call in step.host_calls],
        notepad=step.notepad,
        final_answer=traj.final_answer,
        steps_left=session.steps_left,
        termination=traj.termination,
        rewards=dict(session.rewards),
        done=session.done,
        reward=total if session.done else (0.0 if session.host.scorer is not None else None),
    )


async def _on_kernel_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on workbench's background loop (where the host's pool lives) from another loop."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, background_loop()))


__all__ = ["NBAgentAction", "NBAgentEnvironment", "NBAgentObservation", "NBAgentState"]
