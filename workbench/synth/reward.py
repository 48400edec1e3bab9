"""The synthesizer's reward component, so `rescore` reproduces what the synthesis loop records."""

from __future__ import annotations

from workbench.rewards.registry import RewardContext, reward
from workbench.trajectory import Trajectory


@reward("synth.recorded")
def synthesis_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """accepted × (1 − direct accuracy) of a synthesis trajectory (0 when not accepted)."""
    record = traj.metadata.get("synthesis") or {}
    if not record.get("accepted"):
        return 0.0
    return 1.0 - float(record.get("direct_accuracy") or 0.0)


__all__ = ["synthesis_reward"]
