"""Recompute rewards under a new spec without re-running anything, keeping the history.

    from workbench.rewards import rescore, RewardSpec
    rescore(trajs, RewardSpec.preset("zerosearch"), provenance={"author": "me", "reason": "F1"})
    rescore(store, "asearcher", run="run-3")     # a Store: filters go to iter_trajectories

A list of trajectories gets `traj.rewards` / `traj.reward_spec` set and an entry appended to
`traj.metadata["reward_history"]` (the previous rewards are kept there first). A store (anything
with `record_rewards` and `iter_trajectories`) records each new score through `record_rewards`,
which keeps its own history. Group components see all trajectories of a task id being rescored.
A spec with per-step components also recomputes each `Step.reward` (written back to a store).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol, cast

from workbench.contracts import TrajectoryStore
from workbench.errors import ConfigError
from workbench.rewards.spec import RewardSpec
from workbench.trajectory import Trajectory


class RescoredStore(TrajectoryStore, Protocol):
    """A store `rescore` reads from and records into (`workbench.store.Store` is one)."""

    def iter_trajectories(self, **filters: Any) -> Iterator[Trajectory]: ...


def rescore(
    target: Iterable[Trajectory] | RescoredStore,
    spec: RewardSpec | str,
    *,
    provenance: dict[str, Any] | None = None,
    **filters: Any,
) -> dict[str, dict[str, float]]:
    """Score every trajectory with `spec`; returns {trajectory id: rewards}."""
    if isinstance(spec, str):
        spec = RewardSpec.preset(spec)
    store = cast(RescoredStore, target) if hasattr(target, "record_rewards") else None
    if store is not None:
        trajs = list(store.iter_trajectories(**filters))  # read all before writing
    elif filters:
        raise ConfigError(f"filters {sorted(filters)} only apply to a store; filter the list first")
    else:
        trajs = list(cast(Iterable[Trajectory], target))
    spec_json = spec.to_json()
    results = spec.score_many(trajs)
    for traj, rewards in zip(trajs, results, strict=True):
        if store is not None:
            store.record_rewards(traj.id, rewards, spec.name, spec_json, provenance)
            if spec.per_step:  # the step rewards live in the trajectory itself
                traj.rewards, traj.reward_spec = dict(rewards), spec.name
                store.write(traj)
        history = traj.metadata.setdefault("reward_history", [])
        if not history and traj.rewards:
            history.append(
                {
                    "spec": traj.reward_spec,
                    "rewards": dict(traj.rewards),
                    "spec_json": None,
                    "provenance": {"reason": "before rescoring"},
                    "at": None,
                }
            )
        history.append(
            {
                "spec": spec.name,
                "rewards": dict(rewards),
                "spec_json": spec_json,
                "provenance": dict(provenance or {}),
                "at": time.time(),
            }
        )
        traj.rewards, traj.reward_spec = dict(rewards), spec.name
    return {t.id: r for t, r in zip(trajs, results, strict=True)}
