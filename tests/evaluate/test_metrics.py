"""Avg@k / Pass@k / EM grouping against hand-computed values."""

import pytest

from workbench.evaluate import pass_at_k, summarize
from workbench.trajectory import Task, Trajectory


def _traj(qid, answer, gold, hops, dataset="nq"):
    return Trajectory(task=Task(qid, "q?", [gold], {"hops": hops, "dataset": dataset}), final_answer=answer)


def test_pass_at_k_unbiased_estimator():
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)


def test_summary_per_hop_and_overall():
    trajs = [
        # q1 (1 hop): 2 of 2 right; q2 (1 hop): 0 of 2; q3 (2 hops): 1 of 2, the wrong one partially overlaps
        _traj("q1", "Paris", "Paris", 1),
        _traj("q1", "the Paris", "Paris", 1),
        _traj("q2", "Rome", "Oslo", 1),
        _traj("q2", None, "Oslo", 1),
        _traj("q3", "New York City", "New York", 2),
        _traj("q3", "New York", "New York", 2),
    ]
    rows = {r["hops"]: r for r in summarize(trajs, k=2)}
    assert rows["1"]["questions"] == 2 and rows["1"]["attempts"] == 4
    assert rows["1"]["em"] == pytest.approx(0.5)
    assert rows["1"]["avg@2"] == pytest.approx(0.5) and rows["1"]["pass@2"] == pytest.approx(0.5)
    assert rows["2"]["em"] == pytest.approx(0.5) and rows["2"]["cover_em"] == pytest.approx(1.0)
    assert rows["2"]["f1"] == pytest.approx((0.8 + 1.0) / 2)  # 2·(2/3·1)/(2/3+1) = 0.8
    assert rows["all"]["questions"] == 3 and rows["all"]["pass@2"] == pytest.approx(2 / 3)


def test_datasets_are_reported_separately_and_a_judge_adds_a_column():
    trajs = [_traj("a", "x", "x", 1, "nq"), _traj("b", "y", "z", 1, "hotpot")]
    rows = summarize(trajs, judge=lambda q, pred, golds: 1.0)
    assert {r["dataset"] for r in rows} == {"nq", "hotpot"}
    assert all(r["judge"] == 1.0 for r in rows)
