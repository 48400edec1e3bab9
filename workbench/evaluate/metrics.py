"""The metrics the field reports for search agents: EM, cover-EM, F1, Avg@k and Pass@k.

Per trajectory: EM / cover-EM / F1 of its final answer against the gold aliases. Per question with
k sampled attempts: Avg@k (mean correctness over the attempts) and Pass@k (at least one correct;
with n > k attempts, the unbiased estimator 1 − C(n−c, k)/C(n, k)). Grouped per dataset and per
hop count.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from math import comb

from workbench.rewards import cover_em, exact_match, token_f1
from workbench.trajectory import Trajectory

Judge = Callable[[str, str | None, Sequence[str]], float]  # (question, prediction, golds) -> score in [0, 1]


def answer_scores(traj: Trajectory, normalizer: str = "squad", judge: Judge | None = None) -> dict[str, float]:
    pred, golds = traj.final_answer, traj.task.golden_answers
    scores = {
        "em": exact_match(pred, golds, normalizer),
        "cover_em": cover_em(pred, golds, normalizer),
        "f1": token_f1(pred, golds, normalizer),
    }
    if judge is not None:
        scores["judge"] = float(judge(traj.task.question, pred, golds))
    return scores


class EvalRewards:
    """The evaluation's metrics as a trajectory's rewards: `score(traj)` gives EM, cover-EM and F1
    (+ "total" = EM), so each evaluated trajectory is stored with them (viewer, tuner, rescoring).
    Tasks without gold answers get no rewards."""

    def __init__(self, normalizer: str = "squad") -> None:
        self.normalizer = normalizer
        self.name = "eval" if normalizer == "squad" else f"eval.{normalizer}"

    def score(self, traj: Trajectory) -> dict[str, float]:
        if not traj.task.golden_answers:
            return {}
        return as_rewards(answer_scores(traj, self.normalizer))


def as_rewards(scores: dict[str, float]) -> dict[str, float]:
    """Metric scores as stored rewards: the metrics, and "total" = EM."""
    return {**scores, "total": scores["em"]}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k attempts drawn from n (c correct) is correct."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def dataset_of(traj: Trajectory) -> str:
    meta = traj.task.metadata
    return str(meta.get("dataset") or meta.get("data_source") or meta.get("source") or "default")


def summarize(
    trajectories: Iterable[Trajectory],
    *,
    k: int = 1,
    metric: str = "em",
    normalizer: str = "squad",
    judge: Judge | None = None,
    scores: Mapping[str, dict[str, float]] | None = None,
) -> list[dict[str, object]]:
    """One row per (dataset, hops) group plus an 'all' row per dataset: mean EM / cover-EM / F1
    over attempts, Avg@k and Pass@k of `metric` over questions. `scores` (trajectory id → its
    `answer_scores`) saves computing them again (and calling the judge twice)."""
    by_question: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    hops_of: dict[tuple[str, str], str] = {}
    for traj in trajectories:
        key = (dataset_of(traj), traj.task.id)
        known = scores.get(traj.id) if scores is not None else None
        by_question[key].append(known if known is not None else answer_scores(traj, normalizer, judge))
        hops_of[key] = str(traj.hops) if traj.hops is not None else "-"
    groups: dict[tuple[str, str], list[list[dict[str, float]]]] = defaultdict(list)
    for (dataset, qid), attempts in by_question.items():
        groups[(dataset, hops_of[(dataset, qid)])].append(attempts)
        groups[(dataset, "all")].append(attempts)
    rows = []
    for (dataset, hops), questions in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all", kv[0][1])):
        attempts = [a for q in questions for a in q]
        row: dict[str, object] = {
            "dataset": dataset,
            "hops": hops,
            "questions": len(questions),
            "attempts": len(attempts),
        }
        for name in attempts[0]:
            row[name] = sum(a[name] for a in attempts) / len(attempts)
        correct = [[a[metric] >= 1.0 for a in q] for q in questions]
        row[f"avg@{k}"] = sum(sum(c) / len(c) for c in correct) / len(correct)
        row[f"pass@{k}"] = sum(pass_at_k(len(c), sum(c), min(k, len(c))) for c in correct) / len(correct)
        rows.append(row)
    return rows


__all__ = ["EvalRewards", "Judge", "answer_scores", "as_rewards", "dataset_of", "pass_at_k", "summarize"]
