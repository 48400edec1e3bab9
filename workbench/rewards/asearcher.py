"""ASearcher rewards: set-F1 on the last answer, gated by per-turn format correctness.

A turn is well formed (`correct_format_fn`) when every tag among think/search/access/answer is
balanced, at most one of search/access/answer is opened, the text holds neither "Assistant"
nor "assistant", and `</think>` appears at most once. The trajectory's format is 1 only if
every turn is well formed; the score is `set_f1 × format`.

With `metadata["aug_answers"]` the F1 becomes `0.7·s + 0.3·max(s_aug, s)`; a task whose prompt
carried the "find the most likely answer" instruction (`metadata["valid_instruction"]`) and whose
answer calls the question invalid scores −0.5.

    turn_well_formed("<think>x</think><search>q</search>")   # True
"""

from __future__ import annotations

from workbench.rewards.registry import RewardContext, answer_of, reward
from workbench.rewards.text import set_f1
from workbench.trajectory import Trajectory

_TAGS = ("think", "search", "access", "answer")
_ACTIONS = ("search", "access", "answer")
_INVALID_WORDS = ("question", "invalid", "appropriate", "valid")


def turn_well_formed(text: str) -> bool:
    if "Assistant" in text or "assistant" in text or text.count("</think>") > 1:
        return False
    if any(text.count(f"<{t}>") != text.count(f"</{t}>") for t in _TAGS):
        return False
    return sum(text.count(f"<{t}>") for t in _ACTIONS) <= 1


@reward("asearcher.format")
def format_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """1 when every turn is well formed (balanced tags, ≤1 action, no 'Assistant')."""
    return float(bool(traj.steps) and all(turn_well_formed(s.raw or "") for s in traj.steps))


@reward("asearcher.f1")
def f1_reward(traj: Trajectory, ctx: RewardContext, *, aug_weight: float = 0.3,
              invalid_penalty: float = -0.5) -> float:
    """Set-F1 of the answer, with ASearcher's aug-answer blend and invalid-answer penalty."""
    answer = answer_of(traj)
    meta = traj.task.metadata
    if meta.get("valid_instruction") and answer and any(w in answer.lower()
                                                        for w in _INVALID_WORDS):
        return invalid_penalty
    score = set_f1(answer, traj.task.golden_answers)
    aug = meta.get("aug_answers")
    if aug:
        score = (1 - aug_weight) * score + aug_weight * max(set_f1(answer, aug), score)
    return score
