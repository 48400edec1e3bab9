"""95% intervals for held-out accuracies (`workbench.evaluate.intervals`): Wilson's for a share, a paired
bootstrap for a change."""

from __future__ import annotations

import pytest

from workbench.evaluate.intervals import paired_change, wilson


def test_wilson_matches_the_closed_form_and_stays_inside_0_1():
    low, high = wilson(12, 60)
    assert low == pytest.approx(0.1183, abs=1e-4) and high == pytest.approx(0.3178, abs=1e-4)
    assert wilson(0, 60)[0] == 0.0 and 0.05 < wilson(0, 60)[1] < 0.07
    assert wilson(60, 60)[1] == pytest.approx(1.0) and wilson(0, 0) == (0.0, 1.0)


def test_paired_change_is_seeded_and_brackets_the_mean():
    before, after = [0.0] * 60, [1.0] * 30 + [0.0] * 30
    change, low, high = paired_change(before, after, seed=3)
    assert change == 0.5 and 0.3 < low < 0.5 < high < 0.7
    assert paired_change(before, after, seed=3) == (change, low, high)
    assert paired_change([1.0] * 10, [1.0] * 10) == (0.0, 0.0, 0.0)  # no change anywhere: a point at 0
    with pytest.raises(ValueError, match="differ in length"):
        paired_change([1.0], [1.0, 0.0])
