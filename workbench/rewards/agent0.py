"""Agent0 curriculum rewards and ADPO helpers, in the paper's form and the code's form.

Uncertainty from the executor's self-consistency p (share of answers voting for the majority):
- `uncertainty_paper(p) = 1 − 2|p − 0.5|` (paper eq. 2, peak 1 at p = 0.5)
- `uncertainty_code(p) = min(p, 1 − p)` (curriculum_reward.py: half the paper's value); the code
  also zeroes p unless the majority matches the proposer's answer and p > 0.1. Upstream compared
  against the *last character* of the proposer's answer; here the whole answer is compared.
Tool use: `γ·min(N, C)` with the code's γ = 0.05, C = 4 (≤ 0.2).
Repetition: cluster questions by `1 − BLEU` (average linkage, threshold 0.5); penalty
`λ_rep·|cluster|/batch`. Format gate: a `<question>` was produced (the code pays −1 otherwise).
ADPO (executor): `adpo_scale(p)` scales the GRPO advantage, `adpo_eps_high(p)` is the upper clip.

    uncertainty_paper(0.3), uncertainty_code(0.3)      # 0.6, 0.3
    tool_reward(7)                                     # 0.2
    adpo_scale(0.55), adpo_eps_high(0.55)              # 0.8, 0.25
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from workbench.errors import ConfigError
from workbench.rewards.bleu import cluster_shares
from workbench.rewards.registry import RewardContext, answer_of, question_of, reward
from workbench.rewards.text import normalize_answer
from workbench.trajectory import Trajectory

TOOL_GAMMA, TOOL_CAP = 0.05, 4  # curriculum_reward.py
BLEU_THRESHOLD = 0.5
ADPO_MIN_SCALE = 0.6  # train_qwen3_4b_adpo.sh (the code's default is 0.5)


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def uncertainty_paper(p: float) -> float:
    """Agent0 paper eq. 2: `1 − 2|p − 0.5|`."""
    return 1.0 - 2.0 * abs(p - 0.5)


def uncertainty_code(p: float) -> float:
    """Agent0 code: `min(p, 1 − p)` (= half the paper's form)."""
    return min(p, 1.0 - p)


def self_consistency(answers: Sequence[str | None], *,
                     denominator: str = "all") -> tuple[str | None, float]:
    """(majority answer, p). `denominator="all"` divides by every attempt (the reward's code),
    `"valid"` by the attempts that gave an answer (the data curation's code)."""
    valid = [a for a in answers if a is not None and normalize_answer(a)]
    if not valid:
        return None, 0.0
    counts = Counter(normalize_answer(a) for a in valid)
    top, top_count = counts.most_common(1)[0]
    majority = next(a for a in valid if normalize_answer(a) == top)
    if denominator not in ("all", "valid"):
        raise ConfigError(f"denominator={denominator!r}; use 'all' or 'valid'")
    return majority, top_count / (len(answers) if denominator == "all" else len(valid))


def tool_reward(n_calls: int, gamma: float = TOOL_GAMMA, cap: int = TOOL_CAP) -> float:
    """`γ·min(N, C)`."""
    return gamma * min(n_calls, cap)


def adpo_scale(p: float, min_scale: float = ADPO_MIN_SCALE, low: float = 0.3,
               high: float = 0.8) -> float:
    """ADPO advantage scale `s(p) = m + (1 − m)·clip((p − low)/(high − low), 0, 1)`."""
    return min_scale + (1 - min_scale) * _clip01((p - low) / (high - low))


def adpo_eps_high(p: float, eps: float = 0.2, extra: float = 0.1, high: float = 0.8,
                  width: float = 0.5) -> float:
    """ADPO upper clip `ε + extra·clip((high − p)/width, 0, 1)`; lower clip stays 1 − ε."""
    return eps + extra * _clip01((high - p) / width)


def _executor_answers(traj: Trajectory, ctx: RewardContext) -> list[str | None]:
    if "executor_answers" in traj.metadata:
        return list(traj.metadata["executor_answers"])
    return [answer_of(t) for t in ctx.group]


@reward("agent0.uncertainty", uses="group")
def uncertainty_reward(traj: Trajectory, ctx: RewardContext, *, variant: str = "code") -> float:
    """Executor uncertainty: 'code' min(p,1−p) with the answer-match gate, 'paper' 1−2|p−0.5|.

    Answers come from `metadata["executor_answers"]` (a proposer) or the group's answers."""
    if variant not in ("code", "paper"):
        raise ConfigError(f"variant={variant!r}; use 'code' or 'paper'")
    answers = _executor_answers(traj, ctx)
    if not answers:
        return 0.0
    majority, p = self_consistency(answers)
    if variant == "paper":
        return uncertainty_paper(p)
    target = answer_of(traj) if traj.role == "proposer" else None
    golds = [target] if target else list(traj.task.golden_answers)
    matches = majority is not None and normalize_answer(majority) in {normalize_answer(g)
                                                                      for g in golds}
    return uncertainty_code(p if matches and p > 0.1 else 0.0)


@reward("agent0.tool")
def tool_use_reward(traj: Trajectory, ctx: RewardContext, *, gamma: float = TOOL_GAMMA,
                    cap: int = TOOL_CAP) -> float:
    """γ·min(N, C); N = `metadata["executor_tool_calls"]` or the executed code cells + tool calls."""
    n = traj.metadata.get("executor_tool_calls")
    if n is None:
        n = sum(s.observation is not None for s in traj.steps) + traj.num_tool_calls
    return tool_reward(int(n), gamma, cap)


@reward("agent0.repetition", uses="batch")
def repetition_reward(traj: Trajectory, ctx: RewardContext, *, threshold: float = BLEU_THRESHOLD,
                      scale: float = 1.0) -> float:
    """Repetition penalty λ·|cluster|/B over the batch's questions (positive; weight it −1)."""
    batch = ctx.batch or [traj]
    texts = [question_of(t) or t.task.question for t in batch]
    key = ("agent0.repetition", threshold, tuple(texts))
    shares = ctx.extra.get(key)
    if shares is None:  # one clustering per batch, shared by all its trajectories
        shares = ctx.extra[key] = cluster_shares(texts, threshold)
    index = next((i for i, t in enumerate(batch) if t is traj), None)
    if index is None:
        raise ConfigError("agent0.repetition: the trajectory is not in ctx.batch")
    return scale * shares[index]


@reward("agent0.format")
def format_gate(traj: Trajectory, ctx: RewardContext, *, require_answer: bool = False) -> float:
    """1 when a non-empty `<question>` (and, if asked, an answer) was produced, else 0."""
    ok = bool((question_of(traj) or "").strip())
    if require_answer:
        ok = ok and bool((answer_of(traj) or "").strip())
    return float(ok)
