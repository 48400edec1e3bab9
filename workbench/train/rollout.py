"""From trajectories to training samples, per-turn rewards, and dynamic sampling.

**Context segments.** A trajectory whose context was trimmed has several segments (a step with
`prompt_ids` starts a new one). With `segments="all"` (the default) each segment is its own
training sample: its prompt, then its turns and observations, each token tagged with its turn, so
every turn gets its own advantage (L0 trains every step; ASearcher every generated sequence). With
`segments="last"` only the final context, where the answer was produced, is trained.

A sample is `prompt_ids`, `completion_ids` (model turns and observations, concatenated as
sampled), `env_mask` (1 = model token, 0 = observation), `logprobs`, and `step_index` (the turn
each completion token belongs to, -1 for observation and added tokens). A segment's trailing
observation is dropped (nothing was generated after it in that context). Each segment ends with an
EOS (mask 0) unless its last token is one, so TRL counts only an episode cut by the token budget as
truncated; a completion is capped at `max_completion_length`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.trajectory import Step, Task, Trajectory

FINISHED = ("submitted", "no_code")
Sample = dict[str, list[Any]]  # prompt_ids, completion_ids, env_mask, logprobs, step_index (module docstring)


def _empty(eos_token_id: int | None, fallback_prompt: Sequence[int]) -> Sample:
    pad = [eos_token_id if eos_token_id is not None else 0]
    return {
        "prompt_ids": list(fallback_prompt) or pad,
        "completion_ids": pad,
        "env_mask": [0],
        "logprobs": [0.0],
        "step_index": [-1],
    }


def segment_steps(traj: Trajectory) -> list[list[tuple[int, Step]]]:
    """The trajectory's turns grouped by context segment: [[(turn, step), ...], ...]."""
    out: list[list[tuple[int, Step]]] = []
    for k, step in enumerate(traj.steps):
        if step.prompt_ids is not None or not out:
            out.append([])
        out[-1].append((k, step))
    return out


def trajectory_samples(
    traj: Trajectory,
    eos_token_id: int | None,
    max_completion_length: int,
    segments: str = "all",
    fallback_prompt: Sequence[int] = (),
) -> list[Sample]:
    """The training samples of one trajectory: one per context segment (`"all"`) or the last one."""
    groups = segment_steps(traj)
    if not groups:  # nothing was generated (policy error): one empty, fully masked completion
        return [_empty(eos_token_id, fallback_prompt)]
    if segments == "last":
        groups = groups[-1:]
    samples: list[Sample] = []
    for n, group in enumerate(groups):
        last = n == len(groups) - 1
        prompt = list(group[0][1].prompt_ids or []) or list(fallback_prompt)
        ids: list[int] = []
        mask: list[int] = []
        lps: list[float] = []
        idx: list[int] = []
        for k, step in group:
            ids += step.completion_ids
            mask += [1] * len(step.completion_ids)
            lps += list(step.logprobs or [0.0] * len(step.completion_ids))
            idx += [k] * len(step.completion_ids)
            ids += step.observation_ids
            mask += [0] * len(step.observation_ids)
            lps += [0.0] * len(step.observation_ids)
            idx += [-1] * len(step.observation_ids)
        tail = len(group[-1][1].observation_ids)
        if tail:
            ids, mask, lps, idx = ids[:-tail], mask[:-tail], lps[:-tail], idx[:-tail]
        sample: Sample = {
            "prompt_ids": prompt,
            "completion_ids": ids,
            "env_mask": mask,
            "logprobs": lps,
            "step_index": idx,
        }
        ends = traj.termination in FINISHED or not last  # a segment cut by a trim ended on purpose too
        if ends and eos_token_id is not None and (not ids or ids[-1] != eos_token_id):
            for key, value in (
                ("completion_ids", eos_token_id),
                ("env_mask", 0),
                ("logprobs", 0.0),
                ("step_index", -1),
            ):
                sample[key] = sample[key] + [value]
        if not sample["completion_ids"]:
            sample.update(completion_ids=[eos_token_id or 0], env_mask=[0], logprobs=[0.0], step_index=[-1])
        if not sample["prompt_ids"]:
            sample["prompt_ids"] = [eos_token_id or 0]
        for key in ("completion_ids", "env_mask", "logprobs", "step_index"):
            sample[key] = sample[key][:max_completion_length]
        samples.append(sample)
    return samples


def trajectory_sample(
    traj: Trajectory, eos_token_id: int | None, max_completion_length: int, fallback_prompt: Sequence[int] = ()
) -> Sample:
    """The sample of the trajectory's last context segment."""
    return trajectory_samples(traj, eos_token_id, max_completion_length, "last", fallback_prompt)[0]


def step_rewards(traj: Trajectory) -> list[float]:
    """Per-turn rewards r_t: each `Step.reward` when the reward spec scored turns (`RewardSpec.score_steps`),
    else the trajectory's total on the last turn."""
    if traj.steps and all(s.reward is not None for s in traj.steps):
        return [float(s.reward) for s in traj.steps]  # type: ignore[arg-type]
    n = max(len(traj.steps), 1)
    return [0.0] * (n - 1) + [float(traj.reward or 0.0)]


def task_self_consistency(task: Task) -> float:
    """ADPO's p: the task's `self_consistency` (or `p`, `score`) metadata; 1.0 when absent."""
    for key in ("self_consistency", "p", "score"):
        if key in task.metadata and task.metadata[key] is not None:
            return float(task.metadata[key])
    return 1.0


@dataclass
class RefillReport:
    rounds: int = 0
    prompts_refilled: int = 0
    zero_std_groups_left: int = 0
    dropped_tasks: list[str] = field(default_factory=list)


def dynamic_sampling(
    trajs: list[Trajectory],
    group_size: int,
    draw: Callable[[int], list[Task]],
    run: Callable[[list[Task]], list[Trajectory]],
    max_rounds: int,
) -> RefillReport:
    """Replace groups whose rewards are all equal with fresh groups, in place, up to `max_rounds`.

    Counted in prompts (a group = one question × `group_size` rollouts), never in optimizer steps;
    what is still flat after the last round is kept (its advantage is 0), never a crash.
    """
    report = RefillReport()
    for _ in range(max_rounds):
        flat = [g for g in range(len(trajs) // group_size) if _is_flat(trajs[g * group_size : (g + 1) * group_size])]
        if not flat:
            break
        report.rounds += 1
        fresh = draw(len(flat))
        if not fresh:
            break
        report.dropped_tasks += [trajs[g * group_size].task.id for g in flat[: len(fresh)]]
        new = run([t for t in fresh for _ in range(group_size)])
        report.prompts_refilled += len(fresh)
        for j, g in enumerate(flat[: len(fresh)]):
            trajs[g * group_size : (g + 1) * group_size] = new[j * group_size : (j + 1) * group_size]
    report.zero_std_groups_left = sum(
        _is_flat(trajs[g * group_size : (g + 1) * group_size]) for g in range(len(trajs) // group_size)
    )
    return report


def _is_flat(group: list[Trajectory]) -> bool:
    values = [t.reward for t in group]
    return len(group) > 1 and all(v == values[0] for v in values)


def task_drawer(tasks: Sequence[Task], seed: int) -> Callable[[int], list[Task]]:
    """Draw fresh tasks for refills: a seeded shuffle, cycled."""
    rng = random.Random(seed)
    order: list[Task] = []

    def draw(n: int) -> list[Task]:
        out: list[Task] = []
        while len(out) < n and tasks:
            if not order:
                order.extend(rng.sample(list(tasks), len(tasks)))
            out.append(order.pop())
        return out

    return draw


def pass_rate_by_hop(trajs: Sequence[Trajectory]) -> dict[str, float]:
    """Mean total reward per hop count: {"pass_rate/hop_2": 0.5, ...}."""
    groups: dict[Any, list[float]] = {}
    for t in trajs:
        groups.setdefault(t.hops if t.hops is not None else "na", []).append(float(t.reward or 0.0))
    return {f"pass_rate/hop_{h}": sum(v) / len(v) for h, v in groups.items()}


__all__ = [
    "RefillReport",
    "Sample",
    "dynamic_sampling",
    "pass_rate_by_hop",
    "segment_steps",
    "step_rewards",
    "task_drawer",
    "task_self_consistency",
    "trajectory_sample",
    "trajectory_samples",
]
