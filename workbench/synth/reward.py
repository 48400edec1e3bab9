"""The synthesizer's reward component, so `rescore` reproduces what the synthesis loop records.

A spec naming `synth.recorded` needs it registered first: `register_reward(synthesis_reward)`.
"""

from __future__ import annotations

from workbench.rewards.component import RewardContext, component
from workbench.trajectory import Trajectory


@component("synth.recorded")
def synthesis_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """accepted × (1 − direct accuracy) of a synthesis trajectory (0 when not accepted)."""
    record = traj.metadata.get("synthesis") or {}
    if not record.get("accepted"):
        return 0.0
    return 1.0 - float(record.get("direct_accuracy") or 0.0)


__all__ = ["synthesis_reward"]
