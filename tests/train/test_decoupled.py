"""Decoupled PPO on hand-built tensors; every expected value is worked out from the formula in
`workbench.train.decoupled` (r = π_θ/π_prox, pg = max(-A·r, -A·clip(r, 1-ε, 1+ε_high)),
w = π_prox/π_behav capped at 5, loss = Σ_mask pg·w / N with N the original mask count)."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.train.decoupled import decoupled_ppo_loss, loglinear_prox


def lg(*probs: float) -> torch.Tensor:
    return torch.tensor([[math.log(p) for p in probs]], dtype=torch.float64)


def test_positive_advantage_in_range_and_clipped_tokens():
    """A = 1, ε = 0.2, mask [1, 1, 0].
    token 1: π_prox 0.5, π_θ 0.55 → r = 1.1 (inside [0.8, 1.2]); π_behav 0.25 → w = 2;
             pg = max(-1.1, -1.1) = -1.1; term -1.1·2 = -2.2; d term/d log π_θ = -A·r·w = -2.2.
    token 2: π_prox 0.4, π_θ 0.6 → r = 1.5, clipped to 1.2; π_behav 0.4 → w = 1;
             pg = max(-1.5, -1.2) = -1.2 (the clipped side: no gradient); term -1.2.
    token 3: off the mask (its huge ratio and weight count for nothing).
    loss = (-2.2 - 1.2) / 2 = -1.7; gradient on log π_θ = [-2.2/2, 0, 0] = [-1.1, 0, 0]."""
    logp = lg(0.55, 0.6, 0.9).requires_grad_(True)
    loss, stats = decoupled_ppo_loss(
        logp,
        lg(0.5, 0.4, 0.01),
        lg(0.25, 0.4, 0.001),
        torch.tensor([1.0], dtype=torch.float64),
        torch.tensor([[1, 1, 0]]),
    )
    loss.backward()
    assert loss.item() == pytest.approx(-1.7)
    assert logp.grad.tolist()[0] == pytest.approx([-1.1, 0.0, 0.0])
    assert stats.behaviour_weight_mean == pytest.approx(1.5) and stats.behaviour_weight_max == pytest.approx(2.0)
    assert stats.capped_fraction == 0.0 and stats.clipped_fraction == pytest.approx(0.5)


def test_negative_advantage_with_a_capped_token_masked_or_clamped():
    """A = -2, ε = 0.2, mask [1, 1].
    token 1: π_prox 0.4, π_θ 0.2 → r = 0.5; clipped 0.8; pg = max(2·0.5, 2·0.8) = 1.6 (clipped side);
             π_behav 0.05 → w = 8 > 5: "mask" drops the term, "clamp" keeps it as 1.6·5 = 8.
    token 2: π_prox 0.5, π_θ 0.45 → r = 0.9 (in range); pg = 1.8; π_behav 1.0 → w = 0.5; term 0.9;
             d term/d log π_θ = -A·r·w = 2·0.9·0.5 = 0.9.
    mask:  loss = (0 + 0.9) / 2 = 0.45   (N stays 2: capping does not shrink the denominator)
    clamp: loss = (8 + 0.9) / 2 = 4.45
    gradient either way [0, 0.9/2] = [0, 0.45] (token 1 sits on the clipped side).
    weights 8 and 0.5: mean 4.25, max 8, capped 1/2; k3 = mean(w - 1 - ln w)
      = ((7 - ln 8) + (-0.5 + ln 2)) / 2 = (4.9205584583 + 0.1931471806) / 2 = 2.5568528194."""
    adv, mask = torch.tensor([-2.0], dtype=torch.float64), torch.tensor([[1, 1]])
    prox, behav = lg(0.4, 0.5), lg(0.05, 1.0)
    for action, expected in (("mask", 0.45), ("clamp", 4.45)):
        logp = lg(0.2, 0.45).requires_grad_(True)
        loss, stats = decoupled_ppo_loss(logp, prox, behav, adv, mask, cap_action=action)
        loss.backward()
        assert loss.item() == pytest.approx(expected), action
        assert logp.grad.tolist()[0] == pytest.approx([0.0, 0.45]), action
    assert stats.behaviour_weight_mean == pytest.approx(4.25) and stats.behaviour_weight_max == pytest.approx(8.0)
    assert stats.capped_fraction == pytest.approx(0.5) and stats.mismatch_kl == pytest.approx(2.5568528194)


def test_per_token_advantages_and_a_higher_upper_clip():
    """Per-token A = [1, 3] (an estimator with per-turn credit), ε = 0.2, ε_high = 0.28, no cap.
    token 1: r = 1.25 (π_prox 0.4, π_θ 0.5): inside [0.8, 1.28] → pg = -1.25; w = 1 → term -1.25.
    token 2: r = 1.5 (π_prox 0.2, π_θ 0.3): clipped to 1.28 → pg = max(-4.5, -3.84) = -3.84; w = 2 → -7.68.
    loss = (-1.25 - 7.68) / 2 = -4.465."""
    loss, _ = decoupled_ppo_loss(
        lg(0.5, 0.3),
        lg(0.4, 0.2),
        lg(0.4, 0.1),
        torch.tensor([[1.0, 3.0]], dtype=torch.float64),
        torch.tensor([[1, 1]]),
        epsilon_high=0.28,
        cap=None,
    )
    assert loss.item() == pytest.approx(-4.465)


def test_on_policy_samples_reduce_to_the_plain_surrogate():
    """π_behav = π_prox = π_θ (synchronous, one update per batch): r = 1, w = 1, so the loss is
    -mean(A) over the mask and its gradient is -A/N per token: A = [2, -1] → loss -(2 - 1)/2 = -0.5."""
    logp = lg(0.3, 0.6).requires_grad_(True)
    loss, stats = decoupled_ppo_loss(
        logp, logp.detach(), logp.detach(), torch.tensor([[2.0, -1.0]], dtype=torch.float64), torch.tensor([[1, 1]])
    )
    loss.backward()
    assert loss.item() == pytest.approx(-0.5)
    assert logp.grad.tolist()[0] == pytest.approx([-1.0, 0.5])
    assert stats.mismatch_kl == pytest.approx(0.0) and stats.behaviour_weight_max == pytest.approx(1.0)


def test_unknown_cap_action_names_the_choices():
    with pytest.raises(ValueError, match="mask, clamp"):
        decoupled_ppo_loss(lg(0.5), lg(0.5), lg(0.5), torch.tensor([1.0]), torch.tensor([[1]]), cap_action="drop")


def test_loglinear_prox_interpolates_by_behaviour_version():
    """Trainer version v_θ = 5, so v_prox = 4. Tokens' versions [4, 3, 2, -1]:
    α = (4 - v_b)/(5 - v_b): 0/1 = 0, 1/2, 2/3, and 0 for a token that was not generated.
    behaviour [-1, -2, -3, -4], current [-0.5, -1.0, -1.5, -9]:
    prox = [-1, -2 + ½·1 = -1.5, -3 + ⅔·1.5 = -2.0, -4]."""
    prox = loglinear_prox(
        torch.tensor([-1.0, -2.0, -3.0, -4.0]),
        torch.tensor([-0.5, -1.0, -1.5, -9.0]),
        torch.tensor([4, 3, 2, -1]),
        trainer_version=5,
    )
    assert prox.tolist() == pytest.approx([-1.0, -1.5, -2.0, -4.0])
