"""ASearcher rewards, in upstream's order: set-F1 (with the aug-answer blend) × format, then the
invalid-answer penalty; plus upstream's EM, its prompt templates and an LLM-judge variant.

A turn is well formed (`correct_format_fn`) when search/access/answer tags are balanced, at most
one of them is opened, the text holds neither "Assistant" nor "assistant", and `</think>` appears
at most once. `<think>` itself is not checked: ASearcher's prompt opens it for the model. The
format is 1 only if every generated turn is well formed.

The score (`asearcher.reward`), step by step as upstream computes it:
1. `s = set_f1(answer, golds)`; with `metadata["aug_answers"]`: `s = 0.7·s + 0.3·max(s_aug, s)`;
2. `s = s × format`;
3. when the prompt carried the "find the most likely answer" instruction
   (`metadata["valid_instruction"]`) and the answer contains "question", "invalid", "appropriate"
   or "valid" (case-sensitive, as upstream), `s = −0.5`, whatever the format.

    turn_well_formed("x</think><search>q</search>")     # True: the prompt opened <think>
    asearcher_prompt("Who wrote Emma?", valid_instruction=True)
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from workbench.rewards.component import RewardContext, answer_of, component
from workbench.rewards.text import asearcher_em, set_f1
from workbench.trajectory import Trajectory

_TAGS = ("search", "access", "answer")
_INVALID_WORDS = ("question", "invalid", "appropriate", "valid")
INVALID_PROMPT = (
    "Note that when the Assistant finds the question is invalid, e.g. no answer could match all "
    "information in the question, the Assistant replies with '<answer> the question is invalid. "
    "</answer>'."
)
VALID_PROMPT = "You should try to find the most likely answer. "


def turn_well_formed(text: str) -> bool:
    if "Assistant" in text or "assistant" in text or text.count("</think>") > 1:
        return False
    if any(text.count(f"<{t}>") != text.count(f"</{t}>") for t in _TAGS):
        return False
    return sum(text.count(f"<{t}>") for t in _TAGS) <= 1


@lru_cache(maxsize=4)
def _template(name: str) -> str:
    return resources.files("workbench.rewards").joinpath("prompts", name).read_text(encoding="utf-8")


def asearcher_prompt(question: str, *, access: bool = True, valid_instruction: bool = False) -> str:
    """ASearcher's prompt (`SEARCH_ACCESS_PROMPT_TEMPLATE`, or `SEARCH_ONLY_…` with
    `access=False`); `valid_instruction` swaps the "invalid question" note for "find the most
    likely answer" (upstream does so for a `valid_inst_ratio` share of prompts). It ends with
    "Assistant: \\n<think>\\n": the model continues inside an open think block."""
    text = _template("asearcher_search_access.txt" if access else "asearcher_search_only.txt")
    text = text.replace("{question}", question)
    return text.replace(INVALID_PROMPT, VALID_PROMPT) if valid_instruction else text


def invalid_answer(answer: str | None) -> bool:
    """Upstream's `judge_q_invalid`: the answer names the question invalid (case-sensitive)."""
    return answer is not None and any(w in answer for w in _INVALID_WORDS)


@component("asearcher.format", reads_turn_format=True)
def format_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """1 when every turn is well formed (balanced search/access/answer, ≤1 action, no 'Assistant')."""
    return float(all(turn_well_formed(s.raw or "") for s in traj.steps))


@component("asearcher.f1")
def f1_reward(traj: Trajectory, ctx: RewardContext, *, aug_weight: float = 0.3) -> float:
    """Set-F1 of the answer, with ASearcher's aug-answer blend (no format, no penalty)."""
    answer = answer_of(traj)
    score = set_f1(answer, traj.task.golden_answers)
    aug = traj.task.metadata.get("aug_answers")
    if aug:
        score = (1 - aug_weight) * score + aug_weight * max(set_f1(answer, aug), score)
    return score


@component("asearcher.reward", reads_turn_format=True)
def asearcher_reward(
    traj: Trajectory, ctx: RewardContext, *, aug_weight: float = 0.3, invalid_penalty: float = -0.5
) -> float:
    """ASearcher's score: set-F1 (aug blend) × format, then −0.5 for an 'invalid' answer to a
    prompt that asked for the most likely answer."""
    score = f1_reward(traj, ctx, aug_weight=aug_weight) * format_reward(traj, ctx)
    if traj.task.metadata.get("valid_instruction") and invalid_answer(answer_of(traj)):
        score = invalid_penalty
    return score


@component("asearcher.em")
def em_reward(traj: Trajectory, ctx: RewardContext) -> float:
    """ASearcher's EM: SQuAD normalisation after mapping True/False to yes/no."""
    return asearcher_em(answer_of(traj), traj.task.golden_answers)
