"""How training scores a trajectory: any reward `workbench.rewards.resolve_reward` accepts.

    scorer = resolve_reward("search_r1")           # preset, component, spec file/JSON, or object
    score_trajectory(scorer, traj)  ->  {"em": 1.0, "total": 1.0}
"""

from __future__ import annotations

from typing import Any

from workbench.errors import ConfigError
from workbench.rewards.resolve import resolve_reward
from workbench.trajectory import Trajectory


def score_trajectory(scorer: Any, traj: Trajectory) -> dict[str, float]:
    """Score, store the result on the trajectory, and check it has a total."""
    rewards = dict(scorer.score(traj))
    if "total" not in rewards:
        raise ConfigError(f"reward {getattr(scorer, 'name', scorer)!r} returned no 'total': {sorted(rewards)}")
    traj.rewards = {k: float(v) for k, v in rewards.items()}
    traj.reward_spec = str(getattr(scorer, "name", type(scorer).__name__))
    return traj.rewards


__all__ = ["resolve_reward", "score_trajectory"]
