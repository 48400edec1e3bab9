"""Sentence BLEU and average-linkage clustering for Agent0's repetition penalty (no nltk, no sklearn).

    sentence_bleu(["the", "cat", "sat"], ["the", "cat", "sat"])    # 1.0
    bleu_distances(["a b c d", "a b c d", "x y z"])               # 3×3, 0 on identical pairs
    cluster_average_linkage(D, threshold=0.5)                      # [0, 0, 1]

`sentence_bleu` matches nltk's `sentence_bleu(refs, hyp, smoothing_function=method1)` with the
default 4-gram uniform weights: clipped n-gram precisions, zero counts replaced by 0.1/denominator,
brevity penalty against the closest reference length, 0 when no unigram matches.
`cluster_average_linkage` matches scikit-learn's `AgglomerativeClustering(linkage="average",
metric="precomputed", distance_threshold=t)`: clusters merge while their mean distance is < t.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def sentence_bleu(
    references: Sequence[Sequence[str]], hypothesis: Sequence[str], max_n: int = 4, epsilon: float = 0.1
) -> float:
    """Smoothed (method1) sentence BLEU of token lists."""
    hyp_len = len(hypothesis)
    logs = []
    for n in range(1, max_n + 1):
        counts = _ngrams(hypothesis, n)
        max_ref: Counter = Counter()
        for ref in references:
            max_ref |= _ngrams(ref, n)
        numerator = sum(min(c, max_ref[g]) for g, c in counts.items())
        denominator = max(1, sum(counts.values()))
        if n == 1 and numerator == 0:
            return 0.0
        logs.append(math.log((numerator if numerator else epsilon) / denominator))
    ref_len = min((len(r) for r in references), key=lambda r: (abs(r - hyp_len), r))
    if hyp_len == 0:
        return 0.0
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(math.fsum(logs) / max_n)


def bleu_distances(texts: Sequence[str]) -> np.ndarray:
    """Agent0's `1 − BLEU([t_j], t_i)` for i ≤ j on whitespace tokens, mirrored to i > j."""
    toks = [t.split() for t in texts]
    n = len(toks)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            d[i, j] = d[j, i] = 1.0 - sentence_bleu([toks[j]], toks[i])
    return d


def cluster_average_linkage(dist: np.ndarray, threshold: float) -> list[int]:
    """Cluster labels (0..K-1 in order of first appearance) from a precomputed distance matrix."""
    n = len(dist)
    if n == 0:
        return []
    d = np.array(dist, dtype=float)
    np.fill_diagonal(d, np.inf)
    sizes = np.ones(n)
    alive = np.ones(n, dtype=bool)
    members = {i: [i] for i in range(n)}
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], d, np.inf)
        i, j = (int(x) for x in np.unravel_index(np.argmin(masked), masked.shape))
        if masked[i, j] >= threshold:
            break
        i, j = min(i, j), max(i, j)
        # Lance–Williams update for average linkage
        d[i, :] = (sizes[i] * d[i, :] + sizes[j] * d[j, :]) / (sizes[i] + sizes[j])
        d[:, i] = d[i, :]
        d[i, i] = np.inf
        sizes[i] += sizes[j]
        alive[j] = False
        members[i] += members.pop(j)
    labels = [0] * n
    order = sorted(members.values(), key=min)
    for k, group in enumerate(order):
        for m in group:
            labels[m] = k
    return labels


def cluster_shares(texts: Sequence[str], threshold: float = 0.5) -> list[float]:
    """Each text's cluster size / batch size (Agent0's `cluster_share_per_problem`)."""
    if not texts:
        return []
    labels = cluster_average_linkage(bleu_distances(texts), threshold)
    sizes = Counter(labels)
    return [sizes[k] / len(texts) for k in labels]
