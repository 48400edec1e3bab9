"""The reward an environment pays: `env`, for episodes whose source is an environment (`--env`).

An environment episode (`workbench.envs.episodes.EnvEpisodes`) keeps each step's reward as the environment
returned it in `step.observation["env_reward"]` (None counts as 0) and names its source in
`traj.metadata["env"]`. `env` is a per-step component: its value is their sum, and `RewardSpec.score_steps`
pays each on its own turn, so every estimator trains on it (`--reward env`, `TrainConfig.reward = "env"`).

    RewardSpec(name="env", components=[{"name": "env"}]).score(traj)   # {"env": 1.0, "total": 1.0}
"""

from __future__ import annotations

from workbench.errors import ConfigError
from workbench.rewards.component import RewardContext, component
from workbench.trajectory import Trajectory

ENV_REWARD_KEY = "env_reward"  # where an environment step keeps its reward, in `Step.observation`


@component("env", per_step=True)
def env_step_rewards(traj: Trajectory, ctx: RewardContext) -> list[float]:
    """The environment's own reward for each step (summed: the episode's return)."""
    if "env" not in traj.metadata:
        raise ConfigError(
            f"trajectory {traj.id} did not come from an environment (no metadata['env']); the 'env' reward "
            "scores episodes run with --env (workbench.envs.episodes.EnvEpisodes): pick another reward for it"
        )
    return [float((step.observation or {}).get(ENV_REWARD_KEY) or 0.0) for step in traj.steps]


__all__ = ["ENV_REWARD_KEY", "env_step_rewards"]
