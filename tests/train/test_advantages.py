"""Each estimator against values worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from workbench.errors import ConfigError
from workbench.train import advantages as A


def close(a, b, tol=1e-4):
    return torch.allclose(torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(b, dtype=torch.float32), atol=tol)


def test_grpo_per_question_groups():
    # group [1, 0]: mean .5, unbiased std .7071 → ±.7070; group [1, 1]: std 0 → 0
    adv = A.grpo([1.0, 0.0, 1.0, 1.0], group_size=2)
    s = math.sqrt(0.5)
    assert close(adv, [0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 0.0, 0.0])
    with pytest.raises(ConfigError):
        A.grpo([1.0, 0.0, 1.0], group_size=2)


def test_hrpo_mixed_and_singleton_hop_groups():
    """Dr. Zero eq. 3 with verl's `grpo_batch` rules: eps 1e-6, unbiased std, a lone sample at mean 0 / std 1.

    hop 1: [1, 0, .5] → mean .5; deviations (.5, -.5, 0) → var (.25 + .25 + 0)/2 = .25, std .5
           → [.5/(.5 + 1e-6), -.5/(.5 + 1e-6), 0]
    hop 3: [.8] alone → (.8 - 0)/(1 + 1e-6)
    """
    assert A.HRPO_EPS == 1e-6
    adv = A.hrpo([1.0, 0.0, 0.8, 0.5], hops=[1, 1, 3, 1])
    assert close(adv, [0.5 / 0.500001, -0.5 / 0.500001, 0.8 / 1.000001, 0.0], tol=1e-6)
    # two hop-2 questions with equal rewards: zero advantage, no division blow-up
    assert close(A.hrpo([0.3, 0.3], hops=[2, 2]), [0.0, 0.0])


def test_reinforce_pp_discounted_and_whitened_over_steps():
    assert close(A.discounted_returns([0.0, 0.0, 1.0], 0.5), [0.25, 0.5, 1.0])
    out = A.reinforce_pp([[0.0, 1.0], [0.0, 0.0, 0.0]], gamma=0.5)
    # returns: [.5, 1] and [0, 0, 0]; mean .3, unbiased var = (.04+.49+.09*3)/4 = .2
    scale = 1 / math.sqrt(0.2 + 1e-8)
    expect = [[0.2 * scale, 0.7 * scale], [-0.3 * scale] * 3]
    for got, want in zip(out, expect, strict=True):
        assert close(got, want)
    flat = [g for t in out for g in t]
    assert abs(sum(flat)) < 1e-6


def test_adpo_scale_and_bounds():
    # s(p) = .6 + .4*clip((p-.3)/.5, 0, 1); eps_high(p) = .2 + .1*clip((.8-p)/.5, 0, 1)
    p = [0.1, 0.3, 0.55, 0.8, 0.95]
    assert close(A.adpo_scale(p), [0.6, 0.6, 0.8, 1.0, 1.0])
    assert close(A.adpo_eps_high(p), [0.3, 0.3, 0.25, 0.2, 0.2])
    # min_scale .5 at p = .55: .5 + .5*(.25/.5) = .75
    assert close(A.adpo_scale([0.55], min_scale=0.5), [0.75])
    adv, eps_high = A.adpo([1.0, 0.0, 1.0, 0.0], 2, p=[0.3, 0.3, 0.8, 0.8])
    g = 0.5 / (math.sqrt(0.5) + 1e-4)
    assert close(adv, [0.6 * g, -0.6 * g, g, -g])
    assert close(eps_high, [0.3, 0.3, 0.2, 0.2])
    with pytest.raises(ConfigError):
        A.adpo([1.0, 0.0], 2, p=[0.5])
