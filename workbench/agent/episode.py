"""One NB-Agent episode: Think → Code → Observe in a sandboxed kernel, until an end condition.

The loop talks to its sandbox only through an `EpisodeSandbox` (`workbench.agent.episode_sandbox`): one
`step(code, timeout)` per turn, so the kernel may be local or on another machine.

`_Episode._turn` is one turn on one screen: each of its steps returns an `_Ending` or None, and
`run_episode` writes the ending's termination in one place. It never raises for an episode-level
failure: kernel death, a policy error or anything unexpected ends the trajectory with a termination.

Each observation is encoded once, framed the way the model's chat template frames an observation
message (`workbench.agent.turns`; `AgentConfig.framing`); the notepad block after it is encoded
apart, as the context's replaceable tail (see `ContextWatcher`), and recorded with the message's
closing as the end of that step's observation. The
per-turn text work (parsing the turn, rendering and encoding the observation) runs on one worker
thread, so a huge turn or notepad never stalls the other episodes sharing this event loop.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, TypeVar

from workbench.agent.config import AgentConfig
from workbench.agent.context import ContextWatcher, Opening, window
from workbench.agent.episode_sandbox import EpisodeSandbox, StepResult
from workbench.agent.parsing import parse_turn
from workbench.agent.prompts import render
from workbench.agent.turns import FramedObservation, TurnFramer
from workbench.policies.base import Policy, SamplingParams, policy_context_size
from workbench.policies.chat_framing import resolve_framing
from workbench.trajectory import Step, Task, Termination, Trajectory

STOP = ["</code>"]
TURN_SEED_STRIDE = 1009
"""Turn i of an episode seeded s samples with seed s * TURN_SEED_STRIDE + i: a prime stride, so the turn
seeds of episodes s and s + 1 stay apart for up to 1009 turns."""
NO_CODE_NOTE = "No code ran: write your code inside <code> ... </code>."
T = TypeVar("T")


@lru_cache(maxsize=1)
def _text_worker() -> ThreadPoolExecutor:
    # one thread: text work stays in order and a codec is never used by two of these calls at once
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-agent-text")


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on the agent's text worker thread, awaited without blocking the event loop."""
    return await asyncio.get_running_loop().run_in_executor(_text_worker(), partial(fn, *args))


def render_notepad(snapshot: dict[str, Any]) -> str:
    """The notepad text the model sees, from the snapshot the kernel pushed to the gateway."""
    if not snapshot:
        return ""
    from workbench.runtime import Notepad

    return Notepad.from_snapshot(snapshot).render()


def _observation_parts(
    framer: TurnFramer, completion_ids: list[int], output: str, notepad: str, *, steps_left: int, tokens_left: int
) -> FramedObservation:
    """The observation after a turn, framed: each part encoded once, the notepad block apart (no block
    when the notepad text is empty)."""
    body = render("observation", output=output, steps_left=steps_left, tokens_left=tokens_left)
    block = render("notepad", notepad=notepad) if notepad else ""
    return framer.observation(completion_ids, body, block)


def _stub_ids(
    framer: TurnFramer, completion_ids: list[int], output: str, chars: int, *, steps_left: int, tokens_left: int
) -> list[int]:
    """A read page's observation shrunk to its first `chars` characters (ASearcher's short_text)."""
    short = (
        output
        if len(output) <= chars
        else (output[:chars].rstrip() + " … [page shortened after you read it; what you kept is in the notepad]")
    )
    body = render("observation", output=short, steps_left=steps_left, tokens_left=tokens_left)
    return framer.observation(completion_ids, body).kept_ids


def opening_messages(task: Task, env: EpisodeSandbox, config: AgentConfig) -> list[dict[str, str]]:
    budget = config.token_budget or config.max_context_tokens
    prompt = env.prompt
    if config.prompt == "compact":
        names = ", ".join(f"{name}()" for name in prompt.tool_names)
        system = render("system_compact", max_steps=config.max_steps, tool_names=names)
    else:
        name = "system" if config.prompt == "full" else f"system_{config.prompt}"
        system = render(
            name, max_steps=config.max_steps, max_tokens=budget, tools=prompt.tools_text, notepad_api=prompt.notepad_api
        )
    return [{"role": "system", "content": system}, {"role": "user", "content": render("task", question=task.question)}]


async def run_episode(
    task: Task,
    policy: Policy,
    env: EpisodeSandbox,
    config: AgentConfig,
    *,
    trajectory: Trajectory | None = None,
    seed: int | None = None,
) -> Trajectory:
    """Run one episode of `task` and return its trajectory (never raises for episode failures)."""
    traj = trajectory or Trajectory(task=task)
    traj.lineage.setdefault("policy", policy.describe())
    try:
        ending = await _Episode(traj, policy, env, config, seed).run()
        traj.termination = ending.termination
        if ending.error is not None:
            traj.error = ending.error
    except Exception as exc:  # an episode failure must never end the batch
        traj.termination, traj.error = "error", "".join(traceback.format_exception(exc))[-4000:]
    traj.ended_at = time.time()
    return traj


@dataclass(frozen=True)
class _Ending:
    """Why the episode ended, and what went wrong when something did."""

    termination: Termination
    error: str | None = None


class _Episode:
    """One episode's turns and the state they share: the context, the tokens generated so far, the last
    output (for a hard trim's opening) and the read page waiting to be shortened to a stub."""

    def __init__(self, traj: Trajectory, policy: Policy, env: EpisodeSandbox, config: AgentConfig, seed: int | None):
        self.traj, self.policy, self.env, self.config, self.seed = traj, policy, env, config, seed
        self.codec = policy.codec
        self.framer = TurnFramer(self.codec, resolve_framing(self.codec, config.framing))
        self.started = time.monotonic()
        self.messages = opening_messages(traj.task, env, config)
        self.ctx = ContextWatcher(
            self.codec.chat(self.messages),
            window(config.max_context_tokens, policy_context_size(policy)),
            config.max_new_tokens,
            config.trim,
            keep_notepads=config.keep_notepads,
        )
        self.generated = 0
        self.last_output = ""
        self.stub: tuple[Any, list[int]] | None = None  # (turn, its short observation), applied after the next turn

    async def run(self) -> _Ending:
        """Turn after turn until one returns an ending, or the steps run out."""
        for index in range(self.config.max_steps):
            ending = await self._turn(index)
            if ending is not None:
                return ending
        return _Ending("max_steps")

    async def _turn(self, index: int) -> _Ending | None:
        """Think → Code → Observe once; an `_Ending` when the episode ends on this turn."""
        budget_left = None if self.config.token_budget is None else self.config.token_budget - self.generated
        ending = self._out_of_time_or_tokens(budget_left) or await self._make_room()
        if ending is not None:
            return ending
        step = await self._generate(index, budget_left)
        if isinstance(step, _Ending):
            return step
        result = await self._execute(step)
        output = NO_CODE_NOTE if result.observation is None else result.observation.text
        ending = self._ending_after(step, result)
        if ending is not None:
            step.observation_text = output
            return ending
        await self._observe(step, output, budget_left)
        return None

    def _out_of_time_or_tokens(self, budget_left: int | None) -> _Ending | None:
        if time.monotonic() - self.started > self.config.wall_clock_s:
            return _Ending("wall_clock")
        if budget_left is not None and budget_left <= 0:
            return _Ending("token_budget")
        return None

    async def _make_room(self) -> _Ending | None:
        """Trim before a turn could be cut short by the window; an ending when even trimming leaves no room."""
        min_new = self.config.max_new_tokens
        if self.ctx.needs_trim(min_new):
            opening: Opening = await _off_loop(self._hard_opening) if self.config.trim != "none" else []
            if not self.ctx.trim_to_fit(min_new, lambda: opening):
                return _Ending("token_budget", self.ctx.no_room(min_new))
        return None

    def _hard_opening(self) -> Opening:  # the notepad block stays the context's tail, before any closing
        trimmed = render("trimmed", question=self.traj.task.question, last_output=self.last_output)
        return self.framer.opening([self.messages[0], {"role": "user", "content": trimmed}])

    async def _generate(self, index: int, budget_left: int | None) -> Step | _Ending:
        """The model's turn, parsed and appended to the trajectory as a new step (or a policy error)."""
        prompt_ids = self.ctx.prompt_to_record()
        max_new = self.ctx.room_for_generation()
        if budget_left is not None:
            max_new = min(max_new, budget_left)
        config = self.config
        params = SamplingParams(
            max_new_tokens=max_new,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            stop=STOP,
            seed=None if self.seed is None else self.seed * TURN_SEED_STRIDE + index,
        )
        t0 = time.monotonic()
        try:
            [out] = await self.policy.generate([self.ctx.context_ids], params)
        except Exception as exc:
            return _Ending("policy_error", f"{type(exc).__name__}: {exc}")
        self.generated += len(out.token_ids)
        parsed = await _off_loop(parse_turn, out.text)
        step = Step(
            index=index,
            raw=out.text,
            think=parsed.think,
            code=parsed.code,
            format_flags=parsed.flags,
            prompt_ids=prompt_ids,
            completion_ids=list(out.token_ids),
            logprobs=out.logprobs,
            raw_logprobs=out.raw_logprobs,
            finish_reason=out.finish_reason,
            policy_version=out.policy_version,
            generate_s=time.monotonic() - t0,
            context_tokens=len(self.ctx),
        )
        self.traj.steps.append(step)
        return step

    async def _execute(self, step: Step) -> StepResult:
        """Run the step's code in the environment and record on the step what came back."""
        t1 = time.monotonic()
        remaining = max(1.0, self.config.wall_clock_s - (time.monotonic() - self.started))
        result = await self.env.step(step.code, min(self.config.exec_timeout_s, remaining))
        if result.observation is not None:
            step.execute_s = time.monotonic() - t1
            step.observation = result.observation.to_dict()
        step.host_calls = list(result.host_calls)
        step.notepad = dict(result.notepad or {})
        return result

    def _ending_after(self, step: Step, result: StepResult) -> _Ending | None:
        """An answer was submitted, the kernel died, or the model stopped without code."""
        obs = result.observation
        if result.final_answer is not None:
            self.traj.final_answer = result.final_answer
            return _Ending("submitted")
        if obs is not None and obs.kernel_died:
            return _Ending("kernel_died", obs.error_value or "kernel died")
        if step.code is None and step.finish_reason == "eos":
            return _Ending("no_code")
        return None

    async def _observe(self, step: Step, output: str, budget_left: int | None) -> None:
        """Show the model its output and the notepad, and record on the step exactly what it saw."""
        config = self.config
        steps_left = config.max_steps - step.index - 1
        tokens_left = (self.ctx.max_context_tokens - len(self.ctx) if budget_left is None else budget_left) - len(
            step.completion_ids
        )
        tokens_left = max(0, tokens_left)
        notepad_text = await _off_loop(render_notepad, step.notepad) if config.show_notepad else ""
        seen = await _off_loop(
            partial(
                _observation_parts,
                self.framer,
                step.completion_ids,
                output,
                notepad_text,
                steps_left=steps_left,
                tokens_left=tokens_left,
            )
        )
        # the step records what the model saw after its turn: the observation, the notepad, the closing
        step.observation_text, step.observation_ids = seen.text, seen.ids
        self.last_output = output
        self.ctx.append(step.completion_ids, seen.kept_ids, seen.notepad_ids, seen.closing_ids)
        if config.short_text:
            await self._shorten_read_page(
                step, output, config.short_text, steps_left=steps_left, tokens_left=tokens_left
            )

    async def _shorten_read_page(
        self, step: Step, output: str, chars: int, *, steps_left: int, tokens_left: int
    ) -> None:
        """The page was seen once in full; from the turn after next, a stub (ASearcher's short_text)."""
        if self.stub is not None:
            self.ctx.shrink(*self.stub)
        self.stub = None
        if any(call.name in self.config.page_tools for call in step.host_calls):
            stub_ids = await _off_loop(
                partial(
                    _stub_ids,
                    self.framer,
                    step.completion_ids,
                    output,
                    chars,
                    steps_left=steps_left,
                    tokens_left=tokens_left,
                )
            )
            self.stub = (self.ctx.turns[-1], stub_ids)


__all__ = ["opening_messages", "run_episode"]
