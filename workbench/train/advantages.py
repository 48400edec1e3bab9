"""Advantage estimators: small pure functions on tensors, checkable by hand.

    grpo([1, 0, 0, 1], group_size=2)          # per-question groups: (r - mean) / (std + 1e-4)
    hrpo([1, 0, .5], hops=[1, 1, 3])          # groups by hop count; a singleton gets r / (1 + 1e-6)
    reinforce_pp([[0, 1], [0, 0, 0]], .95)   # per-step discounted returns, whitened over all steps
    adpo([1, 0, 1, 1], 2, p=[.3, .3, .9, .9])  # grpo advantages * s(p), plus a per-sample eps_high(p)
    asearcher([1, 0, 1, 1], 2)                # (r - group mean - 0.5) * 10; flat groups dropped
    reinforce([1, 0])                         # the raw reward (ZeroSearch's REINFORCE)

std is the unbiased (n-1) standard deviation, as TRL and verl compute it. The seeds' conventions:
- HRPO (Dr. Zero `grpo_batch`): GRPO keyed by hop count, eps 1e-6; a hop group of one sample is
  normalised with mean 0 and std 1, so its advantage is r / (1 + 1e-6) (always >= 0 for Dr. Zero's
  rewards). The trainer's hop-group sampler keeps such groups out of a batch.
- REINFORCE++ (L0): the step-level return `G_t = r_t + γ G_{t+1}` whitened over every step in the batch.
- ADPO (Agent0): `s(p) = m + (1-m)·clip((p - p_lo)/(p_hi - p_lo), 0, 1)` and
  `ε_high(p) = ε + 0.1·clip((p_hi - p)/(p_hi - p_lo), 0, 1)` (code: m = 0.6 in its script, p_lo = 0.3,
  p_hi = 0.8, ε = 0.2).
- ASearcher (its rollout workflow, then AReaL's actor): rewards centred by the group mean with no
  std; a group whose centred rewards are all 0 (every rollout scored the same) is dropped; then
  `clip((r - mean + bias) · scaling, ±clip)` with bias -0.5, scaling 10, clip 20; then, with
  `adv_norm` on (AReaL's default), whitened over every loss token of the batch (biased variance,
  eps 1e-5): `token_whiten`.
- REINFORCE (ZeroSearch's default algorithm): the raw reward, no baseline.

The estimator objects that `TrainConfig.estimator` names (their parameters, batching and registry) are in
`workbench.train.estimators`; each built-in one wraps a function here.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch

from workbench.errors import ConfigError

EPS = 1e-4  # TRL's std epsilon
HRPO_EPS = 1e-6  # Dr. Zero's verl `compute_grpo_batch_outcome_advantage`


def _as_tensor(values: Sequence[float] | torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(values, dtype=torch.float32).flatten()


def _std(x: torch.Tensor) -> torch.Tensor:
    return x.std(unbiased=True) if x.numel() > 1 else torch.zeros(())


def grpo(
    rewards: Sequence[float] | torch.Tensor, group_size: int, eps: float = EPS, scale: bool = True
) -> torch.Tensor:
    """Group-relative advantages over consecutive groups of `group_size` rows."""
    r = _as_tensor(rewards)
    if group_size < 1 or r.numel() % group_size:
        raise ConfigError(f"grpo: {r.numel()} rewards do not split into groups of {group_size}")
    g = r.view(-1, group_size)
    adv = g - g.mean(dim=1, keepdim=True)
    if scale:
        std = g.std(dim=1, unbiased=True, keepdim=True) if group_size > 1 else torch.zeros_like(adv)
        adv = adv / (std + eps)
    return adv.flatten()


def group_normalize(
    rewards: Sequence[float] | torch.Tensor, keys: Sequence[Hashable], eps: float = EPS
) -> torch.Tensor:
    """(r - mean_k) / (std_k + eps) within the rows sharing a key; a one-row group uses mean 0, std 1,
    so its advantage is r / (1 + eps) (verl's rule)."""
    r = _as_tensor(rewards)
    if len(keys) != r.numel():
        raise ConfigError(f"group_normalize: {r.numel()} rewards but {len(keys)} keys")
    adv = torch.empty_like(r)
    groups: dict[Hashable, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    for idx in groups.values():
        ix = torch.tensor(idx)
        vals = r[ix]
        if len(idx) == 1:
            adv[ix] = vals / (1.0 + eps)  # mean 0, std 1
        else:
            adv[ix] = (vals - vals.mean()) / (_std(vals) + eps)
    return adv


def hrpo(rewards: Sequence[float] | torch.Tensor, hops: Sequence[int | None], eps: float = HRPO_EPS) -> torch.Tensor:
    """Dr. Zero's hop-grouped advantages: one sample per prompt, baseline per hop count (eq. 3)."""
    return group_normalize(rewards, [h if h is not None else -1 for h in hops], eps)


def discounted_returns(step_rewards: Sequence[float], gamma: float) -> list[float]:
    """G_t = r_t + gamma * G_{t+1}, from the last step back."""
    out: list[float] = []
    running = 0.0
    for r in reversed(list(step_rewards)):
        running = float(r) + gamma * running
        out.append(running)
    return out[::-1]


def reinforce_pp(step_rewards: Sequence[Sequence[float]], gamma: float = 0.95, eps: float = 1e-8) -> list[list[float]]:
    """Per-step returns of each trajectory, whitened with the mean/std over all steps in the batch.

    A trajectory with only a final reward passes `[0, ..., 0, R]`. Returns one list per trajectory.
    """
    returns = [discounted_returns(steps, gamma) for steps in step_rewards]
    flat = torch.tensor([g for traj in returns for g in traj], dtype=torch.float64)
    if flat.numel() == 0:
        return [[] for _ in returns]
    mean = flat.mean()
    var = flat.var(unbiased=True) if flat.numel() > 1 else torch.zeros((), dtype=torch.float64)
    scale = torch.rsqrt(var + eps)
    return [[float((g - mean) * scale) for g in traj] for traj in returns]


def place_on_turns(step_index: Sequence[Sequence[int]], values: Sequence[Sequence[float]], width: int) -> torch.Tensor:
    """(B, width) token advantages: token j of row b gets `values[b][step_index[b][j]]`, 0 where the index is -1."""
    out = torch.zeros((len(step_index), width), dtype=torch.float32)
    for b, (turns, vals) in enumerate(zip(step_index, values, strict=True)):
        for j, k in enumerate(list(turns)[:width]):
            if k >= 0:
                out[b, j] = float(vals[k])
    return out


def adpo_scale(
    p: Sequence[float] | torch.Tensor, min_scale: float = 0.6, p_low: float = 0.3, p_high: float = 0.8
) -> torch.Tensor:
    """s(p): `min_scale` at p <= p_low, rising linearly to 1 at p >= p_high."""
    p = _as_tensor(p)
    return min_scale + (1 - min_scale) * ((p - p_low) / (p_high - p_low)).clamp(0, 1)


def adpo_eps_high(
    p: Sequence[float] | torch.Tensor, epsilon: float = 0.2, boost: float = 0.1, p_low: float = 0.3, p_high: float = 0.8
) -> torch.Tensor:
    """ε_high(p): `epsilon + boost` at p <= p_low, falling linearly to `epsilon` at p >= p_high."""
    p = _as_tensor(p)
    return epsilon + boost * ((p_high - p) / (p_high - p_low)).clamp(0, 1)


def adpo(
    rewards: Sequence[float] | torch.Tensor,
    group_size: int,
    p: Sequence[float] | torch.Tensor,
    min_scale: float = 0.6,
    p_low: float = 0.3,
    p_high: float = 0.8,
    epsilon: float = 0.2,
    boost: float = 0.1,
    eps: float = EPS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Agent0's ADPO: (GRPO advantage * s(p), per-sample upper clip ε_high(p))."""
    adv = grpo(rewards, group_size, eps)
    p_t = _as_tensor(p)
    if p_t.numel() != adv.numel():
        raise ConfigError(f"adpo: {adv.numel()} rewards but {p_t.numel()} self-consistency values")
    return (adv * adpo_scale(p_t, min_scale, p_low, p_high), adpo_eps_high(p_t, epsilon, boost, p_low, p_high))


def reinforce(rewards: Sequence[float] | torch.Tensor) -> torch.Tensor:
    """ZeroSearch's `reinforce` estimator: the sequence reward itself is the advantage."""
    return _as_tensor(rewards).clone()


def asearcher(
    rewards: Sequence[float] | torch.Tensor,
    group_size: int,
    bias: float = -0.5,
    scaling: float = 10.0,
    clip: float = 20.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """ASearcher's per-trajectory advantage before whitening, and which rows are kept.

    Per group of `group_size` consecutive rows (one question): c = r - mean(group) (no std). A group
    whose c are all 0 is dropped (keep False, advantage 0). Kept rows get clip((c + bias)·scaling, ±clip).
    """
    r = _as_tensor(rewards).double()
    if group_size < 1 or r.numel() % group_size:
        raise ConfigError(f"asearcher: {r.numel()} rewards do not split into groups of {group_size}")
    g = r.view(-1, group_size)
    centred = g - g.mean(dim=1, keepdim=True)
    keep = (centred != 0).any(dim=1, keepdim=True).expand_as(centred)
    adv = ((centred + bias) * scaling).clamp(-clip, clip) * keep
    return adv.flatten().float(), keep.flatten()


def token_whiten(
    values: Sequence[float] | torch.Tensor, tokens: Sequence[int] | torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """Whiten per-sequence values over loss tokens: each value counts once per token of its sequence.

    mean = Σ n_i v_i / Σ n_i, var = Σ n_i v_i² / Σ n_i - mean² (biased), out = (v - mean) / (√var + eps):
    AReaL's `masked_normalization` of a value broadcast over each sequence's tokens.
    """
    v = _as_tensor(values).double()
    n = _as_tensor(tokens).double()
    if v.numel() != n.numel():
        raise ConfigError(f"token_whiten: {v.numel()} values but {n.numel()} token counts")
    total = n.sum()
    if total <= 0:
        return torch.zeros_like(v).float()
    mean = (n * v).sum() / total
    var = ((n * v * v).sum() / total - mean * mean).clamp(min=0.0)
    return ((v - mean) / (var.sqrt() + eps)).float()


__all__ = [
    "EPS",
    "HRPO_EPS",
    "adpo",
    "adpo_eps_high",
    "adpo_scale",
    "asearcher",
    "discounted_returns",
    "group_normalize",
    "grpo",
    "hrpo",
    "place_on_turns",
    "reinforce",
    "reinforce_pp",
    "token_whiten",
]
