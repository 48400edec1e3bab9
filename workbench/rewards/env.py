"""The reward an environment pays: `env`, for episodes whose source is an environment (`--env`).

An environment episode (`workbench.envs.episodes.EnvEpisodes`) keeps each step's reward as the environment
returned it in `step.observation["env_reward"]` (None counts as 0) and names its source in
`traj.metadata["env"]`. `env` is a per-step component: its value is their sum, and `RewardSpec.score_steps`
pays each on its own turn, so every estimator trains on it (`--reward env`, `TrainConfig.reward = "env"`).

    RewardSpec(name="env", components=[{"name": "env"}]).score(traj)   # {"env": 1.0, "total": 1.0}

An in-process OpenEnv environment with a `Rubric` also leaves each step's rubric scores in
`step.observation["rubric"]`; `env.rubric` pays one of them per step (`name=""`: the whole rubric, or a
sub-rubric's dotted name), so a spec can weigh a rubric's parts as components of their own.
"""

from __future__ import annotations

from workbench.errors import ConfigError
from workbench.rewards.component import RewardContext, component
from workbench.trajectory import Trajectory

ENV_REWARD_KEY = "env_reward"  # where an environment step keeps its reward, in `Step.observation`
RUBRIC_KEY = "rubric"  # and its OpenEnv rubric's scores: {"": whole rubric, "format": a named sub-rubric, ...}


def _from_an_environment(traj: Trajectory) -> None:
    if "env" not in traj.metadata:
        raise ConfigError(
            f"trajectory {traj.id} did not come from an environment (no metadata['env']); the env rewards "
            "score episodes run with --env (workbench.envs.episodes.EnvEpisodes): pick another reward for it"
        )


@component("env", per_step=True)
def env_step_rewards(traj: Trajectory, ctx: RewardContext) -> list[float]:
    """The environment's own reward for each step (summed: the episode's return)."""
    _from_an_environment(traj)
    return [float((step.observation or {}).get(ENV_REWARD_KEY) or 0.0) for step in traj.steps]


@component("env.rubric", per_step=True)
def env_rubric_scores(traj: Trajectory, ctx: RewardContext, *, name: str = "") -> list[float]:
    """The environment rubric's score for each step ("": the whole rubric; a dotted name: one sub-rubric)."""
    _from_an_environment(traj)
    return [float(((step.observation or {}).get(RUBRIC_KEY) or {}).get(name) or 0.0) for step in traj.steps]


__all__ = ["ENV_REWARD_KEY", "RUBRIC_KEY", "env_rubric_scores", "env_step_rewards"]
