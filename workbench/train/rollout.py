"""From trajectories to what TRL's `rollout_func` must return, and dynamic sampling.

One trajectory → one training sample. **Multi-segment policy:** a trajectory whose context was
trimmed has several segments (`Trajectory.segments()`); training uses the **last** one, the
context in which the final answer was produced, so the reward stays attached to the tokens that
earned it. Earlier segments are kept in the store, not trained on.

A sample is `prompt_ids`, `completion_ids` (model turns and observations, concatenated as
sampled), `env_mask` (1 = model token, 0 = observation), `logprobs`, and `step_index` (the turn
each completion token belongs to, -1 for observation tokens; reinforce_pp uses it for per-step
advantages). A finished episode gets an EOS (mask 0) when its last token is not one, so TRL does
not count it as truncated; the completion is capped at `max_completion_length`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from workbench.trajectory import Task, Trajectory

FINISHED = ("submitted", "no_code")


def trajectory_sample(traj: Trajectory, eos_token_id: int | None, max_completion_length: int,
                      fallback_prompt: Sequence[int] = ()) -> dict[str, list]:
    """The training sample of one trajectory (its last context segment)."""
    segments = traj.segments()
    if not segments:  # nothing was generated (policy error): an empty, fully masked completion
        pad = [eos_token_id if eos_token_id is not None else 0]
        return {"prompt_ids": list(fallback_prompt) or pad, "completion_ids": pad, "env_mask": [0],
                "logprobs": [0.0], "step_index": [-1]}
    first_step = _last_segment_start(traj)
    seg = segments[-1]
    step_index: list[int] = []
    for k, step in enumerate(traj.steps[first_step:], start=first_step):
        step_index += [k] * len(step.completion_ids) + [-1] * len(step.observation_ids)
    step_index = step_index[: len(seg["completion_ids"])]  # the trailing observation was dropped
    sample = {"prompt_ids": seg["prompt_ids"] or list(fallback_prompt), "completion_ids": seg["completion_ids"],
              "env_mask": seg["env_mask"], "logprobs": seg["logprobs"], "step_index": step_index}
    if traj.termination in FINISHED and eos_token_id is not None and \
            (not sample["completion_ids"] or sample["completion_ids"][-1] != eos_token_id):
        for key, value in (("completion_ids", eos_token_id), ("env_mask", 0), ("logprobs", 0.0),
                           ("step_index", -1)):
            sample[key] = sample[key] + [value]
    if not sample["completion_ids"]:
        sample.update(completion_ids=[eos_token_id or 0], env_mask=[0], logprobs=[0.0], step_index=[-1])
    for key in ("completion_ids", "env_mask", "logprobs", "step_index"):
        sample[key] = sample[key][:max_completion_length]
    return sample


def _last_segment_start(traj: Trajectory) -> int:
    starts = [i for i, step in enumerate(traj.steps) if step.prompt_ids is not None]
    return starts[-1] if starts else 0


def step_rewards(traj: Trajectory) -> list[float]:
    """Per-turn rewards: `metadata["step_rewards"]` if the episode set them, else the total on the last turn."""
    explicit = traj.metadata.get("step_rewards")
    if explicit is not None and len(explicit) == len(traj.steps):
        return [float(x) for x in explicit]
    n = max(len(traj.steps), 1)
    return [0.0] * (n - 1) + [float(traj.reward or 0.0)]


def self_consistency(task: Task) -> float:
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


def dynamic_sampling(trajs: list[Trajectory], group_size: int, draw: Callable[[int], list[Task]],
                     run: Callable[[list[Task]], list[Trajectory]], max_rounds: int) -> RefillReport:
    """Replace groups whose rewards are all equal with fresh groups, in place, up to `max_rounds`.

    Counted in prompts (a group = one question × `group_size` rollouts), never in optimizer steps;
    what is still flat after the last round is kept (its advantage is 0), never a crash.
    """
    report = RefillReport()
    for _ in range(max_rounds):
        flat = [g for g in range(len(trajs) // group_size) if _is_flat(trajs[g * group_size:(g + 1) * group_size])]
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
            trajs[g * group_size:(g + 1) * group_size] = new[j * group_size:(j + 1) * group_size]
    report.zero_std_groups_left = sum(
        _is_flat(trajs[g * group_size:(g + 1) * group_size]) for g in range(len(trajs) // group_size))
    return report


def _is_flat(group: list[Trajectory]) -> bool:
    values = [t.reward for t in group]
    return len(group) > 1 and all(v == values[0] for v in values)


def task_drawer(tasks: Sequence[Task], seed: int) -> Callable[[int], list[Task]]:
    """Draw fresh tasks for refills: a seeded shuffle, cycled."""
    rng = random.Random(seed)
    order: list[Task] = []

    def draw(n: int) -> list[Task]:
        out = []
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


__all__ = ["RefillReport", "dynamic_sampling", "pass_rate_by_hop", "self_consistency", "step_rewards",
           "task_drawer", "trajectory_sample"]
