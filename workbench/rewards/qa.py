"""Answer-correctness components shared by every seed (gold aliases = `task.golden_answers`).

em        Search-R1 / Dr. Zero solver: strict EM of the last <answer> (or final_answer)
cover_em  ZeroSearch: a gold is a substring of the answer
f1        SQuAD token F1 (ZeroSearch's training reward); `yes_no_rule=True`: HotpotQA/FlashRAG
set_f1    ASearcher's set-based F1
has_answer  1 for a non-empty answer
"""

from __future__ import annotations

from workbench.rewards.component import RewardContext, answer_of, component
from workbench.rewards.text import cover_em, exact_match, has_answer, set_f1, token_f1
from workbench.trajectory import Trajectory


@component("em")
def em_reward(traj: Trajectory, ctx: RewardContext, *, normalizer: str = "squad") -> float:
    """Exact match of the answer against any gold alias (0 when there is no answer)."""
    return exact_match(answer_of(traj), traj.task.golden_answers, normalizer)


@component("cover_em")
def cover_em_reward(traj: Trajectory, ctx: RewardContext, *, normalizer: str = "squad") -> float:
    """ZeroSearch's substring EM: a normalised gold occurs inside the normalised answer."""
    return cover_em(answer_of(traj), traj.task.golden_answers, normalizer)


@component("f1")
def f1_reward(traj: Trajectory, ctx: RewardContext, *, normalizer: str = "squad", yes_no_rule: bool = False) -> float:
    """Token F1 (Counter overlap), max over gold aliases (HotpotQA's yes/no rule on request)."""
    return token_f1(answer_of(traj), traj.task.golden_answers, normalizer, yes_no_rule=yes_no_rule)


@component("set_f1")
def set_f1_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """ASearcher's set-F1, max over gold aliases."""
    return set_f1(answer_of(traj), traj.task.golden_answers)


@component("has_answer")
def has_answer_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """1 when the trajectory gave a non-empty answer."""
    return has_answer(answer_of(traj))
