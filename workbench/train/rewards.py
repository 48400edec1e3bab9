"""How training scores a trajectory: any reward `workbench.rewards.resolve_reward` accepts.

scorer = resolve_reward("search_r1")           # preset, component, spec file/JSON, or object
score_trajectory(scorer, traj)  ->  {"em": 1.0, "total": 1.0}   # and each Step.reward, when the
                                                                 # spec scores turns (score_steps)
"""

from __future__ import annotations

from workbench.contracts import Scorer
from workbench.errors import ConfigError
from workbench.rewards.resolve import resolve_reward
from workbench.trajectory import Trajectory


def score_trajectory(scorer: Scorer, traj: Trajectory) -> dict[str, float]:
    """Score, store the result on the trajectory, and check it has a total. A scorer with per-turn
    components (`score_steps`) also sets each `Step.reward` (reinforce_pp's r_t)."""
    rewards = dict(scorer.score(traj))  # a RewardSpec with per-step components sets Step.reward here
    score_steps = getattr(scorer, "score_steps", None)  # a RewardSpec's; not every Scorer has one
    if any(s.reward is None for s in traj.steps) and callable(score_steps):
        per_turn = [float(x) for x in score_steps(traj)]
        if len(per_turn) == len(traj.steps):
            for step, r in zip(traj.steps, per_turn, strict=True):
                step.reward = r
    if "total" not in rewards:
        raise ConfigError(f"reward {getattr(scorer, 'name', scorer)!r} returned no 'total': {sorted(rewards)}")
    traj.rewards = {k: float(v) for k, v in rewards.items()}
    traj.reward_spec = str(getattr(scorer, "name", type(scorer).__name__))
    return traj.rewards


__all__ = ["resolve_reward", "score_trajectory"]
