"""Agent0 curriculum rewards and ADPO helpers, in the paper's form and the code's form.

Uncertainty from the executor's self-consistency p (share of answers voting for the majority):
- `uncertainty_paper(p) = 1 − 2|p − 0.5|` (paper eq. 2, peak 1 at p = 0.5)
- `uncertainty_code(p) = min(p, 1 − p)` (curriculum_reward.py: half the paper's value); the code
  also zeroes p unless the majority matches the proposer's answer and p > 0.1. Upstream compared
  against the *last character* of the proposer's answer; here the whole answer is compared.
Tool use: `γ·min(N, C)` with the code's γ = 0.05, C = 4 (≤ 0.2). N counts tool invocations
(`tool_invocations`): by default the executed code cells that did not submit the answer (each is
one `<output>`, the analogue of Agent0's ```` ```output ```` marker; the answer is text in Agent0,
a submit call here). Paper eq. 3 counts them in the *executor's* prediction: a proposer carries
one count per executor attempt in `metadata["executor_tool_calls"]`, and the reward is the mean
over attempts of `γ·min(N_i, C)`. Upstream's code counted markers in the curriculum agent's own
text (`source="self"`).
Repetition: cluster questions by `1 − BLEU` (average linkage, threshold 0.5); penalty
`λ_rep·|cluster|/B`, B = the batch's trajectories that have a question.
Format gate: a `<question>` was produced (the code pays −1 otherwise); the paper's R_format also
needs an answer not given away by the question (`require_answer`, `reject_leak`).
The two curriculum rewards (presets):
- `agent0_paper` (eq. 5): `R_format·max(0, R_unc + 0.6·R_tool − R_rep)`, executor tool counts.
- `agent0` (upstream code): `min(p,1−p) − R_rep + 0.05·min(N_self, 4)`, −1 without a question.
ADPO (executor) is a training estimator: `workbench.train.advantages.adpo_scale/adpo_eps_high`.

    uncertainty_paper(0.3), uncertainty_code(0.3)      # 0.6, 0.3
    tool_reward(7)                                     # 0.2
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from workbench.errors import ConfigError
from workbench.rewards.bleu import cluster_shares
from workbench.rewards.component import RewardContext, answer_of, component, question_of
from workbench.rewards.text import normalize_answer
from workbench.trajectory import Trajectory

TOOL_GAMMA, TOOL_CAP = 0.05, 4  # curriculum_reward.py
TOOL_WEIGHT = 0.6  # paper §4 "Implementation Details": λ_tool = 0.6
FINAL_TOOLS = ("submit_final_answer", "submit_question")  # answering is not tool use
BLEU_THRESHOLD = 0.5


def uncertainty_paper(p: float) -> float:
    """Agent0 paper eq. 2: `1 − 2|p − 0.5|`."""
    return 1.0 - 2.0 * abs(p - 0.5)


def uncertainty_code(p: float) -> float:
    """Agent0 code: `min(p, 1 − p)` (= half the paper's form)."""
    return min(p, 1.0 - p)


def self_consistency(answers: Sequence[str | None], *, denominator: str = "all") -> tuple[str | None, float]:
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


def tool_invocations(traj: Trajectory, count: str = "cells") -> int:
    """N of one trajectory: `"cells"` = executed cells that did not submit an answer (one
    `<output>` each), `"calls"` = host tool calls other than the final-answer submission."""
    if count == "cells":
        return sum(
            1 for s in traj.steps if s.observation is not None and not any(c.name in FINAL_TOOLS for c in s.host_calls)
        )
    if count == "calls":
        return sum(1 for s in traj.steps for c in s.host_calls if c.name not in FINAL_TOOLS)
    raise ConfigError(f"count={count!r}; use 'cells' or 'calls'")


def _executor_answers(traj: Trajectory, ctx: RewardContext) -> list[str | None]:
    if "executor_answers" in traj.metadata:
        return list(traj.metadata["executor_answers"])
    if traj.role == "proposer":  # no executor attempts recorded: nothing to be uncertain about
        return []
    return [answer_of(t) for t in ctx.group]


@component("agent0.uncertainty", uses="group")
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
    matches = majority is not None and normalize_answer(majority) in {normalize_answer(g) for g in golds}
    return uncertainty_code(p if matches and p > 0.1 else 0.0)


@component("agent0.tool", reads_turn_format=True)
def tool_use_reward(
    traj: Trajectory,
    ctx: RewardContext,
    *,
    gamma: float = TOOL_GAMMA,
    cap: int = TOOL_CAP,
    source: str = "executor",
    count: str = "cells",
) -> float:
    """γ·min(N, C), averaged over executor attempts (`source="executor"`, paper eq. 3) or on
    the trajectory's own tool use (`"self"`, upstream code)."""
    if source not in ("executor", "self"):
        raise ConfigError(f"source={source!r}; use 'executor' or 'self'")
    counts = traj.metadata.get("executor_tool_calls") if source == "executor" else None
    if counts is None:
        if source == "executor" and traj.role == "proposer":
            return 0.0  # no executor attempts recorded
        counts = [tool_invocations(traj, count)]
    if isinstance(counts, (int, float)):
        counts = [counts]
    if not counts:
        return 0.0
    return sum(tool_reward(int(n), gamma, cap) for n in counts) / len(counts)


@component("agent0.repetition", uses="batch")
def repetition_reward(
    traj: Trajectory, ctx: RewardContext, *, threshold: float = BLEU_THRESHOLD, scale: float = 1.0
) -> float:
    """Repetition penalty λ·|cluster|/B over the batch's questions (positive; weight it −1).

    A proposer without a question is left out (penalty 0, not counted in B)."""
    batch = ctx.batch or [traj]
    if not any(t is traj for t in batch):
        raise ConfigError("agent0.repetition: the trajectory is not in ctx.batch")
    texts = [_question_text(t) for t in batch]
    kept = {i: q for i, q in enumerate(texts) if q is not None}
    key = ("agent0.repetition", threshold, tuple(texts))
    shares = ctx.extra.get(key)
    if shares is None:  # one clustering per batch, shared by all its trajectories
        shares = dict(zip(kept, cluster_shares(list(kept.values()), threshold), strict=True))
        ctx.extra[key] = shares
    index = next(i for i, t in enumerate(batch) if t is traj)
    return scale * shares.get(index, 0.0)


def _question_text(traj: Trajectory) -> str | None:
    q = question_of(traj)
    if q is None and traj.role != "proposer":
        q = traj.task.question
    return q if q and q.strip() else None


@component("agent0.format", reads_turn_format=True)
def format_gate(
    traj: Trajectory, ctx: RewardContext, *, require_answer: bool = False, reject_leak: bool = False
) -> float:
    """1 when a non-empty question (and, if asked, an answer; if asked, one the question does
    not contain) was produced, else 0."""
    question, answer = (question_of(traj) or "").strip(), (answer_of(traj) or "").strip()
    ok = bool(question)
    if require_answer:
        ok = ok and bool(answer)
    if reject_leak and answer:
        ok = ok and not answer_leaks(question, answer)
    return float(ok)


def answer_leaks(question: str, answer: str) -> bool:
    """The answer is inside the question (case-insensitively, or after SQuAD normalisation)."""
    return answer.lower() in question.lower() or normalize_answer(answer) in normalize_answer(question)
