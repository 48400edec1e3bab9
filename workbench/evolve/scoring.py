"""Scores for self-evolution, read from trajectories: Dr. Zero's proposer reward, solver hits,
majority vote and self-consistency, and Agent0's curriculum reward.

The formulas live in `workbench.rewards` (Dr. Zero format and difficulty; Agent0 uncertainty, tool use,
self-consistency, BLEU-cluster shares); this module only gathers their inputs from a proposer trajectory and its solver attempts.

    fmt = format_components(proposer_traj)          # {"think", "tool", "ans", "integrity", "format"}
    k = solver_hits(attempts, answer)               # exact-match hits against the proposer's answer
    drzero_reward(fmt, k, len(attempts))            # {"total": 0.5*format + difficulty, ...}
    vote = majority_vote([t.final_answer for t in attempts])   # Vote(answer, count, p, p_valid)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from workbench.errors import ConfigError
from workbench.evolve.proposer import Proposal, proposal_of
from workbench.rewards import agent0 as a0
from workbench.rewards.bleu import cluster_shares
from workbench.rewards.drzero import difficulty_score, drzero_format
from workbench.rewards.text import exact_match, normalize_answer
from workbench.trajectory import Trajectory


def format_components(traj: Trajectory, proposal: Proposal | None = None, *, tool: str = "search") -> dict[str, float]:
    """Dr. Zero's format score of a proposer episode (see `workbench.rewards.drzero.drzero_format`).

    Turns are the episode's raw generations; the answer is checked against the source document
    (task metadata) plus every search result the episode received.
    """
    proposal = proposal if proposal is not None else proposal_of(traj)
    calls = [c for s in traj.steps for c in s.tool_calls if c.name == tool]
    answered = [c for c in calls if c.error is None and c.result is not None]
    return drzero_format([s.raw or "" for s in traj.steps],
                         question=proposal.question if proposal else None,
                         answer=proposal.answer if proposal else None, hops=traj.hops or 1,
                         document=str(traj.task.metadata.get("document", "")), n_calls=len(calls),
                         n_responses=len(answered), tool_results=[str(c.result) for c in answered])


def solver_hits(attempts: Sequence[Trajectory], answer: str) -> int:
    """How many attempts' final answers exactly match `answer` (Search-R1 normalisation)."""
    return int(sum(exact_match(t.final_answer, [answer]) for t in attempts))


def drzero_reward(fmt: dict[str, float], k: int, n: int, *, format_weight: float = 0.5) -> dict[str, float]:
    """Dr. Zero proposer reward `format_weight·format + difficulty`; difficulty only when format > 0."""
    difficulty = difficulty_score(k, n) if fmt["format"] > 0 and n > 0 else 0.0
    total = format_weight * fmt["format"] + difficulty
    return {**fmt, "difficulty": difficulty, "solver_k": float(k), "solver_n": float(n), "total": total}


@dataclass(frozen=True)
class Vote:
    """Majority vote over solver answers. `p` divides by all attempts (Agent0's reward), `p_valid` by
    the attempts that gave an answer (Agent0's data curation)."""

    answer: str | None
    count: int
    p: float
    p_valid: float
    n: int


def majority_vote(answers: Sequence[str | None]) -> Vote:
    """The most common normalised non-empty answer (ties: the one seen first), with both shares."""
    answer, p = a0.self_consistency(answers, denominator="all")
    _, p_valid = a0.self_consistency(answers, denominator="valid")
    return Vote(answer.strip() if answer else None, round(p * len(answers)), p, p_valid, len(answers))


def in_band(p: float, low: float, high: float) -> bool:
    """Agent0 curation keeps `low <= p <= high` (README: 0.3 to 0.8)."""
    return low <= p <= high


def uncertainty(p: float, *, form: str = "paper") -> float:
    """Agent0's uncertainty term: paper `1 − 2|p − ½|`, or the code's `min(p, 1 − p)` (half of it)."""
    if form == "paper":
        return a0.uncertainty_paper(p)
    if form == "code":
        return a0.uncertainty_code(p)
    raise ConfigError(f"uncertainty form {form!r}: use 'paper' or 'code'")


def repetition_shares(questions: Sequence[str], threshold: float = 0.5) -> list[float]:
    """Agent0's repetition penalty: each question's BLEU-cluster size / batch size."""
    return cluster_shares(list(questions), threshold)


def agent0_reward(traj: Trajectory, vote: Vote, proposal: Proposal | None, repetition: float, *,
                  form: str = "paper", tool_weight: float = 0.05, tool_cap: int = 4, tool: str = "search",
                  ) -> dict[str, float]:
    """Curriculum reward `uncertainty + γ·min(tool calls, C) − repetition`, gated by format.

    Gate: a question and an answer were submitted and the answer is not inside the question (else the
    total is −1, Agent0's score for a missing question). With `form="code"` the uncertainty is also
    gated as in Agent0's code: 0 unless the majority answer matches the proposer's and p > 0.1.
    """
    valid = bool(proposal and proposal.question and proposal.answer and
                 normalize_answer(proposal.answer) not in normalize_answer(proposal.question))
    calls = sum(1 for s in traj.steps for c in s.tool_calls if c.name == tool and c.error is None)
    tool_term = a0.tool_reward(calls, tool_weight, tool_cap)
    if not valid:
        return {"format": 0.0, "uncertainty": 0.0, "tool_use": tool_term, "repetition": repetition,
                "p": vote.p, "total": -1.0}
    p = vote.p
    if form == "code":
        agrees = vote.answer is not None and exact_match(vote.answer, [proposal.answer]) > 0  # type: ignore[union-attr]
        p = p if agrees and p > 0.1 else 0.0
    u = uncertainty(p, form=form)
    return {"format": 1.0, "uncertainty": u, "tool_use": tool_term, "repetition": repetition, "p": vote.p,
            "total": u + tool_term - repetition}


__all__ = ["Vote", "agent0_reward", "drzero_reward", "format_components", "in_band", "majority_vote",
           "repetition_shares", "solver_hits", "uncertainty"]
