"""Training rows from trajectories, and each row's advantage: the data half of the trainer.

    rows = TrainingRows.build(trajs, eos, max_completion_length, segments="all")
    rows.pad_to(multiple_of_group)          # fully masked fillers: no loss, no reward, advantage 0
    rows.pending()                          # what TRL's `rollout_func` hands back (ids, masks, extras)
    adv = row_advantages(config.make_estimator(), Batch(global_trajs, group_size), offset, rows.row_traj, ...)

One trajectory gives one row per trained context segment (`TrainConfig.segments`); its reward sits
on its last segment's row. Advantages are computed by the run's estimator (`workbench.train.estimators`)
per trajectory over the global batch and placed on its rows (per token for per-turn values).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from workbench.errors import TrainingError
from workbench.train import advantages as A
from workbench.train.estimators import Advantages, Batch, Estimator
from workbench.train.rollout import step_rewards, task_self_consistency, trajectory_samples
from workbench.trajectory import Task, Trajectory

ROW_FIELDS = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "step_index")


def tasks_dataset(tasks: Sequence[Task]) -> Any:
    """The training dataset: the question as `prompt`, the whole task as JSON."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": t.question, "task_json": json.dumps(dataclasses.asdict(t))} for t in tasks])


def workbench_reward(
    prompts: list[Any],
    completions: list[Any],
    wb_reward: list[float | None],
    wb_rewards: list[dict[str, float]] | None = None,
    log_metric: Any = None,
    **_: Any,
) -> list[float | None]:
    """TRL reward function: the totals the reward spec already gave each trajectory in the rollout.

    A trajectory's total sits on its last segment's row; earlier segments and filler rows get None,
    so TRL's logged reward is the mean over trajectories (advantages are set by the trainer)."""
    if log_metric is not None and wb_rewards:
        scored = [r for r, total in zip(wb_rewards, wb_reward, strict=True) if total is not None]
        for name in sorted({k for r in scored for k in r if k != "total"}):
            vals = [r[name] for r in scored if name in r]
            log_metric(f"reward/{name}", sum(vals) / len(vals))
    return [None if r is None else float(r) for r in wb_reward]


@dataclass
class TrainingRows:
    """A batch's training rows: `samples[r]` (token fields), `row_traj[r]` (its trajectory, -1 for a
    filler) and `kind[r]` ("segment", "last" = the trajectory's last segment, "filler")."""

    trajs: list[Trajectory]
    samples: list[dict[str, Any]] = field(default_factory=list)
    row_traj: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    eos: int | None = None

    @classmethod
    def build(
        cls, trajs: Sequence[Trajectory], eos: int | None, max_completion_length: int, segments: str
    ) -> TrainingRows:
        per_traj = [trajectory_samples(t, eos, max_completion_length, segments) for t in trajs]
        samples = [s for ss in per_traj for s in ss]
        row_traj = [i for i, ss in enumerate(per_traj) for _ in ss]
        kind = [
            "last" if r == len(samples) - 1 or row_traj[r + 1] != row_traj[r] else "segment"
            for r in range(len(samples))
        ]
        return cls(list(trajs), samples, row_traj, kind, eos)

    @property
    def segments(self) -> int:
        """Rows that come from trajectories (not fillers)."""
        return sum(k != "filler" for k in self.kind)

    def pad_to(self, target: int) -> None:
        """Append fully masked filler rows up to `target` rows: no loss, no reward, advantage 0."""
        eos = self.eos
        for _ in range(target - len(self.samples)):
            self.samples.append(
                {
                    "prompt_ids": [eos if eos is not None else 0],
                    "completion_ids": [eos or 0],
                    "env_mask": [0],
                    "logprobs": [0.0],
                    "step_index": [-1],
                }
            )
            self.row_traj.append(-1)
            self.kind.append("filler")

    def _row_trajs(self) -> list[Trajectory | None]:
        return [self.trajs[i] if i >= 0 else None for i in self.row_traj]

    def pending(self) -> dict[str, list[Any]]:
        """The rows as TRL's `rollout_func` returns them: token fields plus per-row extras."""
        out: dict[str, list[Any]] = {k: [s[k] for s in self.samples] for k in ROW_FIELDS}
        ts, kind = self._row_trajs(), self.kind
        out.update(
            wb_row=list(kind),
            wb_reward=[
                float(t.reward or 0.0) if t is not None and k == "last" else None for t, k in zip(ts, kind, strict=True)
            ],
            wb_rewards=[
                dict(t.rewards) if t is not None and k == "last" else {} for t, k in zip(ts, kind, strict=True)
            ],
            task_id=[t.task.id if t else "" for t in ts],
            hops=[t.hops if t else None for t in ts],
            turns=[len(t.steps) if t else 0 for t in ts],
            termination=[t.termination if t else "" for t in ts],
            self_consistency=[task_self_consistency(t.task) if t else 1.0 for t in ts],
            step_rewards=[step_rewards(t) if t else [] for t in ts],
        )
        return out

    def dataset_rows(self) -> list[dict[str, Any]]:
        """The rows as dataset inputs (prompt and task JSON; "" / "{}" for fillers)."""
        return [
            {"prompt": t.task.question if t else "", "task_json": json.dumps(dataclasses.asdict(t.task)) if t else "{}"}
            for t in self._row_trajs()
        ]


def row_advantages(
    estimator: Estimator,
    batch: Batch,
    offset: int,
    row_traj: Sequence[int],
    step_index: Sequence[Sequence[int]],
    width: int,
) -> Advantages:
    """The estimator's advantages of the global `batch`, placed on this process's rows.

    This process's trajectories start at `offset` in `batch.trajectories`; `row_traj[r]` is the local
    trajectory of row r (-1: a filler row: advantage 0, `eps_high` = `batch.epsilon`, not kept);
    `step_index[r]` the turn of each completion token of row r (-1: not a model token). Per-trajectory
    values become (B,), per-turn values (B, width) on each turn's tokens; `eps_high` and `keep` (B,).
    """
    adv = estimator.advantages(batch)
    n = len(batch.trajectories)
    for name in ("values", "eps_high", "keep"):
        value = getattr(adv, name)
        if value is not None and (value.dim() not in (1, 2) or value.size(0) != n):
            raise TrainingError(
                f"estimator {estimator.name!r} returned {name} of shape {tuple(value.shape)} for {n} "
                "trajectories; give one entry per trajectory (values may be (N, turns))"
            )
    at = [offset + i if i >= 0 else -1 for i in row_traj]
    if adv.values.dim() == 2:  # per turn: each turn's value on its tokens
        values = A.place_on_turns(step_index, [adv.values[j].tolist() if j >= 0 else [] for j in at], width)
    else:
        values = torch.tensor([float(adv.values[j]) if j >= 0 else 0.0 for j in at], dtype=torch.float32)
    eps_high = keep = None
    if adv.eps_high is not None:
        eps_high = torch.tensor([float(adv.eps_high[j]) if j >= 0 else batch.epsilon for j in at])
    if adv.keep is not None:
        keep = torch.tensor([bool(adv.keep[j]) if j >= 0 else False for j in at])
    return dataclasses.replace(adv, values=values, eps_high=eps_high, keep=keep)


__all__ = ["ROW_FIELDS", "TrainingRows", "row_advantages", "tasks_dataset", "workbench_reward"]
