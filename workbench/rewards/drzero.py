"""Dr. Zero proposer rewards, as its code computes them (solver reward: the `em` component).

Format (`compute_challenger_format_scores`):
- `think`: fraction of turns that start with `<think>…</think>`.
- `tool`: 1 if hops == 1 else 0; when the valid search calls equal the tool responses and are > 0
  it becomes `min((1 + calls)/hops, 1)`, and the tool results join the document text.
- `ans`: the normalised answer is yes/no or a substring of the normalised document + results;
  then 1.0 for ≤ 5 words, 0.5 for ≤ 10, else 0.
- `integrity`: question and answer non-empty and the answer not inside the question.
- `format = (1 + think + tool + ans)/4` if integrity else 0.

Difficulty: `(n − k)/(n − 1) if 0 < k < n else 0` for k solver hits out of n (max at k = 1).
Proposer reward as coded: `0.5·format + difficulty` (difficulty only when format > 0).

    drzero_format(["<think>plan</think><question>Q?</question><answer>Vel</answer>"],
                  question="Q?", answer="Vel", hops=1, document="Vel is ...")["format"]  # 1.0
    difficulty_score(1, 5)   # 1.0
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from workbench.rewards.component import RewardContext, answer_of, component, question_of
from workbench.rewards.text import exact_match, normalize_answer
from workbench.trajectory import Trajectory

_THINK_START = re.compile(r"^\s*<think>(.*?)</think>", re.DOTALL)


def drzero_format(
    turns: Sequence[str],
    *,
    question: str | None,
    answer: str | None,
    hops: int,
    document: str = "",
    n_calls: int = 0,
    n_responses: int = 0,
    tool_results: Sequence[str] = (),
) -> dict[str, float]:
    """The four parts and the combined format score of one proposer response."""
    think = sum(bool(_THINK_START.match(t)) for t in turns) / len(turns) if turns else 0.0
    hops = max(1, int(hops))
    tool = 1.0 if hops == 1 else 0.0
    context = document
    if n_calls == n_responses and n_calls > 0:
        tool = min((1 + n_calls) / hops, 1.0)
        context = " ".join([document, *tool_results])
    ans = 0.0
    norm_answer = normalize_answer(answer or "")
    if norm_answer and (norm_answer in ("yes", "no") or norm_answer in normalize_answer(context)):
        words = len(norm_answer.split())
        ans = 1.0 if words <= 5 else 0.5 if words <= 10 else 0.0
    integrity = bool(question and question.strip() and norm_answer and norm_answer not in normalize_answer(question))
    fmt = (1 + think + tool + ans) / 4 if integrity else 0.0
    return {"think": think, "tool": tool, "ans": ans, "integrity": float(integrity), "format": fmt}


def difficulty_score(k: int, n: int) -> float:
    """`1(0<k<n)·(n−k)/(n−1)`: 1 when exactly one of n solver attempts is right."""
    return (n - k) / (n - 1) if 0 < k < n else 0.0


def _format_of(traj: Trajectory, tool: str) -> dict[str, float]:
    calls = [c for s in traj.steps for c in s.host_calls if c.name == tool]
    answered = [c for c in calls if c.error is None and c.result is not None]
    return drzero_format(
        [s.raw or "" for s in traj.steps],
        question=question_of(traj),
        answer=answer_of(traj),
        hops=traj.hops or 1,
        document=str(traj.task.metadata.get("document", "")),
        n_calls=len(calls),
        n_responses=len(answered),
        tool_results=[str(c.result) for c in answered],
    )


@component("drzero.format", reads_turn_format=True)
def format_reward(traj: Trajectory, ctx: RewardContext, *, tool: str = "search") -> float:
    """Dr. Zero proposer format score (1 + think + tool + ans)/4, gated by integrity."""
    return _format_of(traj, tool)["format"]


def solver_outcomes(traj: Trajectory, ctx: RewardContext) -> list[float] | None:
    """Solver outcomes for this trajectory's question.

    A proposer carries them in `metadata["solver_correct"]` (0/1 per attempt) or
    `metadata["solver_answers"]` (strings, EM-matched against its own answer). Otherwise the
    group's trajectories (same task id) are the attempts, EM-matched against the task's golds.
    """
    meta = traj.metadata
    if "solver_correct" in meta:
        return [float(bool(x)) for x in meta["solver_correct"]]
    if "solver_answers" in meta:
        answer = answer_of(traj)
        golds = [answer] if answer else []
        return [exact_match(a, golds) if golds else 0.0 for a in meta["solver_answers"]]
    if traj.role == "proposer":
        return None
    return [exact_match(answer_of(t), t.task.golden_answers) for t in ctx.group]


@component("drzero.difficulty", uses="group")
def difficulty_reward(
    traj: Trajectory, ctx: RewardContext, *, gate_on_format: bool = True, tool: str = "search"
) -> float:
    """Dr. Zero difficulty (n−k)/(n−1) for 0<k<n; for proposers only when format > 0."""
    hits = solver_outcomes(traj, ctx)
    if not hits:
        return 0.0
    if gate_on_format and traj.role == "proposer" and _format_of(traj, tool)["format"] <= 0:
        return 0.0
    return difficulty_score(int(sum(hits)), len(hits))
