"""One NB-Agent episode: Think → Code → Observe in a sandboxed kernel, until an end condition.

The loop talks to its sandbox only through an `Environment` (`workbench.agent.environment`): one
`step(code, timeout)` per turn, so the kernel may be local or on another machine.

`run_episode` is the whole loop on one screen. It never raises for an episode-level failure: kernel
death, a policy error or anything unexpected ends the trajectory with a termination reason.

Each observation is encoded once; the notepad block after it is encoded apart, as the context's
replaceable tail (see `ContextWatcher`), and recorded as the end of that step's observation. The
per-turn text work (parsing the turn, rendering and encoding the observation) runs on one worker
thread, so a huge turn or notepad never stalls the other episodes sharing this event loop.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, partial
from typing import Any, TypeVar

from workbench.agent.config import AgentConfig
from workbench.agent.context import ContextWatcher, window
from workbench.agent.environment import Environment, EpisodeEnv
from workbench.agent.parsing import parse_turn
from workbench.agent.prompts import render
from workbench.policies.base import Codec, Policy, SamplingParams, policy_context_size
from workbench.trajectory import Step, Task, Trajectory

STOP = ["</code>"]
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
    codec: Any, output: str, notepad: str, *, steps_left: int, tokens_left: int
) -> tuple[str, list[int], str, list[int]]:
    """(observation text, its ids, notepad block text, its ids): each encoded once, the notepad apart
    (no block when the notepad text is empty)."""
    body = render("observation", output=output, steps_left=steps_left, tokens_left=tokens_left)
    block = render("notepad", notepad=notepad) if notepad else ""
    return body, codec.encode(body), block, codec.encode(block) if block else []


def _stub_ids(codec: Codec, output: str, chars: int, *, steps_left: int, tokens_left: int) -> list[int]:
    """A read page's observation shrunk to its first `chars` characters (ASearcher's short_text)."""
    short = (
        output
        if len(output) <= chars
        else (output[:chars].rstrip() + " … [page shortened after you read it; what you kept is in the notepad]")
    )
    return codec.encode(render("observation", output=short, steps_left=steps_left, tokens_left=tokens_left))


def opening_messages(task: Task, env: Environment, config: AgentConfig) -> list[dict[str, str]]:
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
    env: Environment,
    config: AgentConfig,
    *,
    trajectory: Trajectory | None = None,
    seed: int | None = None,
) -> Trajectory:
    """Run one episode of `task` and return its trajectory (never raises for episode failures)."""
    traj = trajectory or Trajectory(task=task)
    traj.lineage.setdefault("policy", policy.describe())
    try:
        await _loop(traj, policy, env, config, seed)
    except Exception as exc:  # an episode failure must never end the batch
        traj.termination, traj.error = "error", "".join(traceback.format_exception(exc))[-4000:]
    traj.ended_at = time.time()
    return traj


async def _loop(traj: Trajectory, policy: Policy, env: Environment, config: AgentConfig, seed: int | None) -> None:
    codec = policy.codec
    started = time.monotonic()
    messages = opening_messages(traj.task, env, config)
    ctx = ContextWatcher(
        codec.chat(messages),
        window(config.max_context_tokens, policy_context_size(policy)),
        config.max_new_tokens,
        config.trim,
    )
    generated = 0
    last_output = ""
    stub: tuple[Any, list[int]] | None = None  # (turn, its short observation), applied after the next turn

    def hard_opening() -> list[int]:  # the notepad block stays the context's tail, after this
        trimmed = render("trimmed", question=traj.task.question, last_output=last_output)
        return codec.chat([messages[0], {"role": "user", "content": trimmed}])

    for index in range(config.max_steps):
        if time.monotonic() - started > config.wall_clock_s:
            traj.termination = "wall_clock"
            return
        budget_left = None if config.token_budget is None else config.token_budget - generated
        if budget_left is not None and budget_left <= 0:
            traj.termination = "token_budget"
            return
        min_new = config.max_new_tokens  # trim before a turn could be cut short by the window
        if ctx.needs_trim(min_new):
            opening = await _off_loop(hard_opening) if config.trim != "none" else []
            if not ctx.trim_to_fit(min_new, opening.copy):
                traj.termination, traj.error = "token_budget", ctx.no_room(min_new)
                return
        prompt_ids = ctx.prompt_to_record()
        max_new = ctx.room_for_generation()
        if budget_left is not None:
            max_new = min(max_new, budget_left)
        params = SamplingParams(
            max_new_tokens=max_new,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            stop=STOP,
            seed=None if seed is None else seed * 1009 + index,
        )

        t0 = time.monotonic()
        try:
            [out] = await policy.generate([ctx.context_ids], params)
        except Exception as exc:
            traj.termination, traj.error = "policy_error", f"{type(exc).__name__}: {exc}"
            return
        generated += len(out.token_ids)
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
            finish_reason=out.finish_reason,
            generate_s=time.monotonic() - t0,
            context_tokens=len(ctx),
        )
        traj.steps.append(step)

        t1 = time.monotonic()
        remaining = max(1.0, config.wall_clock_s - (time.monotonic() - started))
        result = await env.step(parsed.code, min(config.exec_timeout_s, remaining))
        obs = result.observation
        if obs is not None:
            step.execute_s = time.monotonic() - t1
            step.observation = obs.to_dict()
            output = obs.text
        else:
            output = NO_CODE_NOTE
        step.tool_calls = list(result.tool_calls)
        step.notepad = dict(result.notepad or {})

        if result.final_answer is not None:
            traj.final_answer = result.final_answer
            step.observation_text = output
            traj.termination = "submitted"
            return
        if obs is not None and obs.kernel_died:
            step.observation_text = output
            traj.termination, traj.error = "kernel_died", obs.error_value or "kernel died"
            return
        if parsed.code is None and out.finish_reason == "eos":
            step.observation_text = output
            traj.termination = "no_code"
            return

        steps_left = config.max_steps - index - 1
        tokens_left = (ctx.max_context_tokens - len(ctx) if budget_left is None else budget_left) - len(out.token_ids)
        notepad_text = await _off_loop(render_notepad, step.notepad) if config.show_notepad else ""
        body, body_ids, block, block_ids = await _off_loop(
            partial(
                _observation_parts, codec, output, notepad_text, steps_left=steps_left, tokens_left=max(0, tokens_left)
            )
        )
        # the step records what the model saw after its turn: the observation, then the notepad
        step.observation_text, step.observation_ids = body + block, body_ids + block_ids
        last_output = output
        ctx.append(step.completion_ids, body_ids, block_ids)
        if config.short_text:  # the page was seen once in full; from the turn after next, a stub
            if stub is not None:
                ctx.shrink(*stub)
            stub = None
            if any(call.name in config.page_tools for call in step.tool_calls):
                stub = (
                    ctx.turns[-1],
                    await _off_loop(
                        partial(
                            _stub_ids,
                            codec,
                            output,
                            config.short_text,
                            steps_left=steps_left,
                            tokens_left=max(0, tokens_left),
                        )
                    ),
                )
    traj.termination = "max_steps"


__all__ = ["EpisodeEnv", "opening_messages", "run_episode"]
