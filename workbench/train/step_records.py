"""What a training step did with its rollouts, as store events a viewer reads back
(`TrajectoryViewer.groups(step=...)`):

- `advantages`: every trajectory of the global batch in order, its advantage as the estimator
  gave it (one number, or one per turn where per-turn credit applies), which were kept in the
  loss, and whether the values were then whitened over the batch's tokens (`token_whiten`: the
  trained values are those, whitened).
- `dropped_groups`: the groups dynamic sampling replaced because their rewards were all equal
  (these trajectories are not written to the store; their ids, answers and rewards are here).

    log = event_log(store)                       # None when the store cannot log events
    log.log_event(run_id, "advantages", advantages_payload(step, estimator.name, batch, adv))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from workbench.train.estimators import Advantages, Batch
from workbench.trajectory import Trajectory


@runtime_checkable
class EventLog(Protocol):
    """Where step records go: `workbench.store.Store` (its `log_event`)."""

    def log_event(
        self, run_id: str, kind: str, payload: dict[str, Any] | None = None, trajectory_id: str | None = None
    ) -> None: ...


def event_log(store: object) -> EventLog | None:
    return store if isinstance(store, EventLog) else None


def advantages_payload(step: int, estimator: str, batch: Batch, adv: Advantages) -> dict[str, Any]:
    """The `advantages` event of one generation batch (per-turn values cut to each one's turns)."""
    trajs = batch.trajectories
    values: list[Any] = adv.values.tolist()
    if adv.values.dim() == 2:
        values = [row[: max(len(t.steps), 1)] for row, t in zip(values, trajs, strict=True)]
    return {
        "step": int(step),
        "estimator": estimator,
        "group_size": batch.group_size,
        "per_turn": adv.values.dim() == 2,
        "token_whiten": bool(adv.token_whiten),
        "trajectories": [t.id for t in trajs],
        "advantages": values,
        "kept": None if adv.keep is None else [bool(k) for k in adv.keep.tolist()],
    }


def dropped_payload(step: int, before: Sequence[Trajectory], after: Sequence[Trajectory]) -> dict[str, Any] | None:
    """The `dropped_groups` event: the trajectories dynamic sampling replaced, by task; None if none."""
    kept = {id(t) for t in after}
    groups: dict[str, dict[str, Any]] = {}
    for t in before:
        if id(t) in kept:
            continue
        group = groups.setdefault(
            t.task.id,
            {"task_id": t.task.id, "question": t.task.question, "trajectories": [], "rewards": [], "answers": []},
        )
        group["trajectories"].append(t.id)
        group["rewards"].append(t.reward)
        group["answers"].append(t.final_answer)
    return {"step": int(step), "groups": list(groups.values())} if groups else None
