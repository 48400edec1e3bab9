"""`EnvEpisodes`: any text environment as workbench's episode source, token-exact.

    runner = EnvEpisodes("openenv:my_envs.games:GuessEnv", max_turns=6)     # or "openenv+http://HOST:PORT"
    trajectories = await runner(env_tasks(8), policy)       # an EpisodeRunner: train(cfg, episodes=runner)
    runner.run(env_tasks("tasks.jsonl"), policy, store=Store("runs/guess"))   # scored with `env`, stored

Each episode opens its own environment, resets it with the task's arguments (`env_tasks`: a JSONL row's
fields, or `seed=i`), and the rendered observation is the first user message through the policy's chat
template (a chat environment's reset messages, a verifiers example's prompt, go through it as they are).
Each turn the model's text becomes the action (its one str field: `action_field=` to name it) and the next
observation (of a chat environment: its new messages' contents) is framed as the chat template frames an
observation (`TurnFramer`): sampled ids keep env mask 1, observation ids 0, nothing is re-tokenized. Each
step keeps the environment's reward in `step.observation["env_reward"]`; the `env` reward component sums
them (per turn, for every estimator). An in-process OpenEnv environment's `Rubric` scores, and a verifiers
rubric's (on the last step), go to `step.observation["rubric"]` (component `env.rubric`).

The episode ends when the environment says done (termination "submitted", the last action as
`final_answer`), after `max_turns` ("max_steps"), when the tokens run out ("token_budget") or when the
environment fails ("error"). Live episodes generate together, `concurrency` at a time.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.agent.turns import TurnFramer
from workbench.contracts import Scorer, TrajectoryStore
from workbench.envs.protocols import EnvEpisode, EnvReply, EnvSource
from workbench.envs.source import load_env_source
from workbench.envs.text import choose_action_field, messages_text, observation_text
from workbench.errors import ConfigError
from workbench.policies.base import Completion, Policy, SamplingParams, policy_context_size
from workbench.policies.chat_framing import FramingMode, resolve_framing
from workbench.rewards.env import ENV_REWARD_KEY, RUBRIC_KEY
from workbench.trajectory import Step, Task, Trajectory

RESET_KEY = "reset"  # task.metadata[RESET_KEY]: the keyword arguments of the environment's reset


def env_tasks(source: str | Path | int, *, limit: int | None = None) -> list[Task]:
    """Tasks for environment episodes: `n` → `reset(seed=i)` for i in 0..n-1; a JSONL path → one task per
    row, its fields (all but `id`) the reset arguments."""
    if isinstance(source, int):
        return [Task(id=f"seed-{i}", question=f"seed {i}", metadata={RESET_KEY: {"seed": i}}) for i in range(source)]
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"tasks file {path} not found; give a JSONL file of reset arguments, or --episodes N")
    tasks: list[Task] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: not JSON ({exc}); one object of reset arguments per line") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}:{number}: a JSON object of reset arguments per line, got {type(row).__name__}")
        task_id = str(row.pop("id", f"{path.stem}-{len(tasks)}"))
        question = str(row.get("question") or json.dumps(row, separators=(",", ":")))
        tasks.append(Task(id=task_id, question=question, metadata={RESET_KEY: row}))
    return tasks[:limit] if limit is not None else tasks


def reset_arguments(task: Task) -> dict[str, Any]:
    """The keyword arguments `task` resets its environment with."""
    found = task.metadata.get(RESET_KEY)
    if not isinstance(found, dict):
        raise ConfigError(
            f"task {task.id} has no reset arguments: build environment tasks with "
            f"workbench.envs.episodes.env_tasks(path or n), or set task.metadata[{RESET_KEY!r}] to a dict"
        )
    return dict(found)


class _Episode:
    """One live episode: its trajectory, environment session and token context."""

    def __init__(self, task: Task, session: EnvEpisode, traj: Trajectory) -> None:
        self.task, self.session, self.traj = task, session, traj
        self.context: list[int] = []
        self.used = 0  # completion + observation tokens so far
        self.live = True

    def end(self, termination: Any, error: str | None = None) -> None:
        self.traj.termination, self.live = termination, False
        if error is not None:
            self.traj.error = error


class EnvEpisodes:
    """An episode runner over an environment `source` (an `EnvSource` or a `load_env_source` spec)."""

    def __init__(
        self,
        source: EnvSource | str,
        *,
        max_turns: int = 8,
        max_turn_tokens: int = 64,
        temperature: float = 1.0,
        max_total_tokens: int | None = None,
        action_field: str | None = None,
        render: Callable[[dict[str, Any]], str] | None = None,
        system: str | None = None,
        framing: FramingMode = "auto",
        concurrency: int = 8,
        role: str = "solver",
        run_id: str = "",
    ) -> None:
        self.source = load_env_source(source) if isinstance(source, str) else source
        if max_turns < 1 or max_turn_tokens < 1 or concurrency < 1:
            raise ConfigError("EnvEpisodes: max_turns, max_turn_tokens and concurrency must be at least 1")
        self.max_turns, self.max_turn_tokens, self.temperature = max_turns, max_turn_tokens, temperature
        self.max_total_tokens = max_total_tokens
        self.render = render or observation_text
        self.system, self.framing, self.concurrency = system, framing, concurrency
        self.role, self.run_id = role, run_id
        self._chosen_field = action_field
        self._field: str | None = None

    @property
    def action_field(self) -> str:
        """The action field that gets the model's text (from the source's action schema, checked once)."""
        if self._field is None:
            schema = self.source.action_schema()
            self._field = choose_action_field(schema, self._chosen_field, where=self.source.name)
        return self._field

    async def __call__(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        _ = self.action_field  # a bad action model fails before any environment opens
        out: list[Trajectory] = []
        for start in range(0, len(tasks), self.concurrency):
            out += await self._batch(tasks[start : start + self.concurrency], policy)
        return out

    def run(
        self,
        tasks: Sequence[Task],
        policy: Policy,
        *,
        store: TrajectoryStore | None = None,
        reward: Scorer | str = "env",
    ) -> list[Trajectory]:
        """Run, score with `reward` and record in `store` (blocking, for scripts and notebooks)."""
        from workbench.agent.recorder import Recorder
        from workbench.blocking import run_blocking
        from workbench.rewards import resolve_reward

        scorer = resolve_reward(reward)
        recorder = Recorder(store)
        return [recorder.record(t, scorer) for t in run_blocking(self(tasks, policy))]

    async def _batch(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        sessions = await asyncio.gather(*(self.source.open() for _ in tasks), return_exceptions=True)
        try:
            failed = next((s for s in sessions if isinstance(s, BaseException)), None)
            if failed is not None:
                raise ConfigError(f"{self.source.name}: could not open an environment ({failed})") from failed
            episodes = [
                _Episode(task, session, self._trajectory(task, policy))
                for task, session in zip(tasks, sessions, strict=True)
                if not isinstance(session, BaseException)
            ]
            await self._play(episodes, policy)
        finally:
            opened = [s for s in sessions if not isinstance(s, BaseException)]
            await asyncio.gather(*(s.close() for s in opened), return_exceptions=True)
        return [e.traj for e in episodes]

    def _trajectory(self, task: Task, policy: Policy) -> Trajectory:
        meta = {"env": self.source.name, "env_action_field": self.action_field}
        return Trajectory(
            task=task, role=self.role, run_id=self.run_id, lineage={"policy": policy.describe()}, metadata=meta
        )

    async def _play(self, episodes: list[_Episode], policy: Policy) -> None:
        framer = TurnFramer(policy.codec, resolve_framing(policy.codec, self.framing))
        firsts = await asyncio.gather(*(self._reset(e, policy) for e in episodes))
        params = SamplingParams(max_new_tokens=self.max_turn_tokens, temperature=self.temperature)
        window = policy_context_size(policy)
        for turn in range(self.max_turns):
            live = [e for e, ok in zip(episodes, firsts, strict=True) if ok and e.live]
            if window is not None:
                for e in live:
                    if len(e.context) + self.max_turn_tokens > window:
                        e.end("token_budget")
                live = [e for e in live if e.live]
            if not live:
                break
            t0 = time.perf_counter()
            outs = await policy.generate([e.context for e in live], params)
            gen_s = (time.perf_counter() - t0) / len(live)
            steps = [self._step(e, out, turn, gen_s) for e, out in zip(live, outs, strict=True)]
            await asyncio.gather(*(self._act(e, step, framer) for e, step in zip(live, steps, strict=True)))
        for e in episodes:
            if e.live:
                e.end("max_steps")
            rewards = [(s.observation or {}).get(ENV_REWARD_KEY) or 0.0 for s in e.traj.steps]
            e.traj.metadata.update(turns=len(e.traj.steps), env_return=float(sum(rewards)))
            e.traj.ended_at = time.time()

    async def _reset(self, episode: _Episode, policy: Policy) -> bool:
        """Reset the environment and build the opening; False when the episode is already over."""
        try:
            first = await episode.session.reset(**reset_arguments(episode.task))
        except Exception as exc:
            episode.end("error", f"reset failed: {type(exc).__name__}: {exc}")
            return False
        prompt = first.messages or [{"role": "user", "content": self.render(first.observation)}]
        if self.system and not any(m["role"] == "system" for m in prompt):
            prompt = [{"role": "system", "content": self.system}, *prompt]
        episode.traj.metadata["env_opening"] = messages_text([m for m in prompt if m["role"] != "system"])
        if first.messages:
            episode.traj.metadata["env_prompt"] = prompt
        episode.context = policy.codec.chat(prompt)
        if first.done:
            episode.end("submitted")
            return False
        return True

    def _step(self, episode: _Episode, out: Completion, turn: int, gen_s: float) -> Step:
        step = Step(
            index=turn,
            raw=out.text,
            completion_ids=list(out.token_ids),
            logprobs=list(out.logprobs) if out.logprobs is not None else None,
            raw_logprobs=list(out.raw_logprobs) if out.raw_logprobs is not None else None,
            finish_reason=out.finish_reason,
            generate_s=gen_s,
            context_tokens=len(episode.context),
            prompt_ids=list(episode.context) if turn == 0 else None,
        )
        episode.traj.steps.append(step)
        episode.context = episode.context + step.completion_ids
        episode.used += len(step.completion_ids)
        return step

    async def _act(self, episode: _Episode, step: Step, framer: TurnFramer) -> None:
        """Send the turn's text as the action; frame and record what comes back."""
        action = step.raw.strip()
        t0 = time.perf_counter()
        try:
            reply = await episode.session.step({self.action_field: action})
        except Exception as exc:
            step.execute_s = time.perf_counter() - t0
            episode.end("error", f"step failed: {type(exc).__name__}: {exc}")
            return
        step.execute_s = time.perf_counter() - t0
        self._observe(episode, step, reply, framer)
        if reply.done:
            episode.traj.final_answer = action
            episode.end("submitted")
        elif self.max_total_tokens is not None and episode.used >= self.max_total_tokens:
            episode.end("token_budget")

    def _observe(self, episode: _Episode, step: Step, reply: EnvReply, framer: TurnFramer) -> None:
        text = self.render(reply.observation) if reply.messages is None else messages_text(reply.messages)
        step.observation = {
            "text": text,
            "fields": reply.observation,
            **({"messages": reply.messages} if reply.messages is not None else {}),
            ENV_REWARD_KEY: reply.reward,
            "done": reply.done,
            "metadata": reply.metadata,
            **({RUBRIC_KEY: reply.rubric} if reply.rubric else {}),
        }
        body = f"\n{text}\n" if framer.framing.is_continuation else text
        seen = framer.observation(step.completion_ids, body)
        step.observation_text, step.observation_ids = seen.text, seen.ids
        episode.context = episode.context + seen.ids
        episode.used += len(seen.ids)


__all__ = ["RESET_KEY", "EnvEpisodes", "env_tasks", "reset_arguments"]
