"""95% confidence intervals for held-out accuracies and their changes (the SmolLM2 demo prints them).

An accuracy is a share of questions answered right: its interval is Wilson's score interval (good at
small counts and at 0% or 100%, where the normal approximation collapses to a point). A change
between two stages is paired (the same questions at every stage): its interval is a percentile
bootstrap over questions, resampling question indices and taking the mean difference, seeded, so
the same results give the same interval.

    wilson(12, 60)                                   # (0.118, 0.318)
    paired_change([0, 1, 0, 1], [1, 1, 1, 1])        # (0.5, 0.0, 1.0): change, low, high
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson(correct: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval (low, high) for `correct` of `total`; (0, 1) for no questions."""
    if total <= 0:
        return 0.0, 1.0
    p = correct / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_change(
    before: Sequence[float], after: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """(mean change, low, high): the 95% percentile-bootstrap interval of mean(after - before) over
    questions; `before[i]` and `after[i]` score the same question (1 right, 0 wrong)."""
    if len(before) != len(after):
        raise ValueError(f"paired scores differ in length: {len(before)} before, {len(after)} after")
    if not before:
        return 0.0, 0.0, 0.0
    import numpy as np

    diffs = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(diffs), size=(resamples, len(diffs)))
    low, high = np.percentile(diffs[picks].mean(axis=1), [2.5, 97.5])
    return float(diffs.mean()), float(low), float(high)


__all__ = ["Z95", "paired_change", "wilson"]
