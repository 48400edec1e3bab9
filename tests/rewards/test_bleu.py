import random

import numpy as np
import pytest

from workbench.rewards import cluster_average_linkage, cluster_shares, sentence_bleu
from workbench.rewards.bleu import bleu_distances


def test_bleu_hand_computed():
    ref, hyp = "the cat sat on the mat".split(), "the cat sat on a mat".split()
    # precisions 5/6, 3/5, 2/4, 1/3; equal lengths so BP = 1
    assert sentence_bleu([ref], hyp) == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    # method1 smoothing: zero 3- and 4-gram counts become 0.1/1; BP = exp(1 - 3/2)
    assert sentence_bleu([["the", "cat", "sat"]], ["the", "cat"]) == pytest.approx(
        (0.1 * 0.1) ** 0.25 * np.exp(1 - 3 / 2)
    )
    assert sentence_bleu([ref], ref) == 1.0
    assert sentence_bleu([ref], ["dog"]) == 0.0 and sentence_bleu([ref], []) == 0.0


def test_distances_mirror_the_upper_triangle():
    d = bleu_distances(["a b c d e", "a b c d f", "x y z"])
    assert d[0, 0] == 0.0 and d[0, 1] == d[1, 0] == pytest.approx(
        1 - sentence_bleu([["a", "b", "c", "d", "f"]], ["a", "b", "c", "d", "e"])
    )
    assert d[0, 2] == 1.0


def test_cluster_shares_for_near_duplicates():
    qs = [
        "what is the capital of the country of vel orun",
        "what is the capital of the country of vel orun ?",
        "how many legs does a spider have",
    ]
    assert cluster_shares(qs) == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert cluster_shares([]) == []


def test_clustering_matches_scikit_learn():
    sklearn = pytest.importorskip("sklearn.cluster")
    rng = random.Random(0)
    for trial in range(20):
        n = rng.randrange(2, 12)
        pts = np.array([[rng.random(), rng.random()] for _ in range(n)])
        d = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
        ours = cluster_average_linkage(d, 0.3)
        ref = sklearn.AgglomerativeClustering(
            n_clusters=None, distance_threshold=0.3, linkage="average", metric="precomputed"
        ).fit(d)

        def same(labels):
            return {frozenset(np.flatnonzero(np.array(labels) == k)) for k in set(labels)}

        assert same(ours) == same(list(ref.labels_)), trial
