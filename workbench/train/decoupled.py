"""Decoupled PPO (AReaL): the policy loss for samples drawn by an older policy than the one trained.

Three policies meet in an asynchronous run: π_behav sampled the tokens (possibly several optimizer
steps ago), π_prox is the trainer's policy when this batch's update began, π_θ is the policy being
optimized. The loss separates the trust region (π_θ against π_prox) from the off-policy correction
(π_prox against π_behav):

    r    = π_θ / π_prox                           (per token)
    pg   = max(-A·r, -A·clip(r, 1-ε, 1+ε_high))   (PPO's clipped surrogate, written as a loss)
    w    = π_prox / π_behav                       (behaviour weight, no gradient)
    w    → 0 where w > cap   ("mask", AReaL's default, cap 5)   or   min(w, cap)   ("clamp", TIS-style)
    loss = Σ_mask pg·w / N,   N = the number of loss tokens before any capping

The denominator is the original mask: capping a token removes its term, never its share of N.

With one optimizer step per generated batch, π_prox at forward time is π_θ itself (no update has
happened yet), so `prox_logp = logp.detach()` is exact and free; with several updates per batch it is
the batch's logprobs under the weights the first update started from (TRL's `old_per_token_logps`).
`loglinear_prox` approximates it without that forward pass (AReaL's `loglinear`), from each token's
behaviour version.

Every function here takes plain tensors, so the loss composes with any estimator's advantages
(per trajectory or per token) and with LoRA (only the gradient's target differs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import torch

from workbench.train.config import CAP_ACTIONS

CapAction = Literal["mask", "clamp"]


@dataclass(frozen=True)
class DecoupledStats:
    """What one loss evaluation says about the off-policy correction (over the loss tokens)."""

    behaviour_weight_mean: float
    behaviour_weight_max: float
    capped_fraction: float  # share of loss tokens whose weight exceeded the cap
    mismatch_kl: float  # k3 estimate of KL(π_behav ‖ π_prox): mean of w - 1 - log w
    clipped_fraction: float  # share of loss tokens where the clipped surrogate was taken


def behaviour_weights(
    prox_logp: torch.Tensor,
    behav_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    cap: float | None = 5.0,
    cap_action: CapAction = "mask",
) -> tuple[torch.Tensor, DecoupledStats]:
    """w = π_prox / π_behav per token, capped (0 over the cap with "mask", `cap` with "clamp"), and
    statistics over `mask`'s tokens (`clipped_fraction` 0: no ratio is known here)."""
    if cap_action not in CAP_ACTIONS:
        raise ValueError(f"cap_action {cap_action!r}: use one of {', '.join(CAP_ACTIONS)}")
    mask = mask.to(prox_logp.dtype)
    log_w = (prox_logp - behav_logp).detach()
    weight = torch.exp(log_w)
    over = (weight > cap) if cap is not None else torch.zeros_like(weight, dtype=torch.bool)
    if cap is not None and cap_action == "clamp":
        applied = torch.clamp(weight, max=cap)
    else:
        applied = torch.where(over, torch.zeros_like(weight), weight)
    on = mask > 0
    n = mask.sum().clamp(min=1.0)
    w_on = weight[on]
    stats = DecoupledStats(
        behaviour_weight_mean=float(w_on.mean()) if w_on.numel() else 1.0,
        behaviour_weight_max=float(w_on.max()) if w_on.numel() else 1.0,
        capped_fraction=float((over & on).sum() / n),
        mismatch_kl=float(((weight - 1 - log_w) * mask).sum() / n),
        clipped_fraction=0.0,
    )
    return applied, stats


def decoupled_ppo_loss(
    logp: torch.Tensor,
    prox_logp: torch.Tensor,
    behav_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    cap: float | None = 5.0,
    cap_action: CapAction = "mask",
) -> tuple[torch.Tensor, DecoupledStats]:
    """The decoupled PPO loss of one batch and its statistics: the formula above, term by term (the
    reference the trainer's loss is checked against).

    logp: (B, T) log π_θ of the sampled tokens, with gradient.
    prox_logp, behav_logp: (B, T) log π_prox and log π_behav (no gradient taken through them).
    advantages: (B,) one per sequence, or (B, T) one per token.
    mask: (B, T) 1 on the tokens the loss trains (the model's own tokens), 0 elsewhere.
    epsilon, epsilon_high: the clip range [1-ε, 1+ε_high] (ε_high defaults to ε).
    cap: the behaviour-weight cap (None: no cap); cap_action: "mask" drops capped tokens' terms,
        "clamp" keeps them with weight `cap`.
    """
    weight, stats = behaviour_weights(prox_logp, behav_logp, mask, cap=cap, cap_action=cap_action)
    high = epsilon if epsilon_high is None else epsilon_high
    mask = mask.to(logp.dtype)
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages
    ratio = torch.exp(logp - prox_logp.detach())
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1 - epsilon, 1 + high)
    pg = torch.maximum(unclipped, clipped)
    n = mask.sum().clamp(min=1.0)
    loss = (pg * weight * mask).sum() / n
    took_clipped = float(((clipped > unclipped) & (mask > 0)).sum() / n)
    return loss, dataclasses.replace(stats, clipped_fraction=took_clipped)


def loglinear_prox(
    behav_logp: torch.Tensor, logp: torch.Tensor, versions: torch.Tensor, trainer_version: int
) -> torch.Tensor:
    """log π_prox approximated between behaviour and current logprobs, by each token's version.

    Versions count optimizer steps: `trainer_version` is the version of the weights being trained
    (v_θ), the proximal policy is one step behind it (v_prox = v_θ - 1, the last weights sent to the
    rollouts), and `versions` holds each token's behaviour version v_b (negative: not generated, e.g.
    prompt or observation tokens, left at the behaviour value):

        alpha = (v_prox - v_b) / (v_θ - v_b), clamped to [0, 1];   log π_prox ≈ log π_b + alpha·(log π_θ - log π_b)

    A token sampled by v_prox itself gets alpha = 0 (its behaviour logprob is the proximal one)."""
    v_b = versions.to(logp.dtype)
    gap = (trainer_version - 1) - v_b
    span = trainer_version - v_b
    generated = versions >= 0
    alpha = torch.where((span > 0) & generated, gap / span.clamp(min=1.0), torch.zeros_like(v_b)).clamp(0.0, 1.0)
    logp = logp.detach()
    return behav_logp + alpha * (logp - behav_logp)


__all__ = ["CapAction", "DecoupledStats", "behaviour_weights", "decoupled_ppo_loss", "loglinear_prox"]
