"""Inputs of the self-evolution rewards, gathered from a proposer trajectory and its solver attempts.

Every reward itself is a `workbench.rewards` preset (Dr. Zero: `drzero_proposer`, `drzero_solver`;
Agent0: `agent0_paper` or `agent0`, `agent0_executor`). This module records what those presets read
on the proposer's trajectory, scores a batch of proposers, and computes the votes the QA set needs.

    attach_attempts(proposer_traj, attempts)        # metadata: solver_correct, executor_answers, ...
    score_proposers(trajs, RewardSpec.preset("drzero_proposer"), batch="it0")
    fmt = format_components(proposer_traj)          # {"think", "tool", "ans", "integrity", "format"}
    vote = majority_vote([t.final_answer for t in attempts])   # Vote(answer, count, p, p_valid)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.errors import ConfigError
from workbench.evolve.proposer import Proposal, proposal_of
from workbench.rewards import agent0 as a0
from workbench.rewards.bleu import cluster_shares
from workbench.rewards.drzero import drzero_format
from workbench.rewards.registry import answer_of
from workbench.rewards.spec import RewardSpec
from workbench.rewards.text import exact_match
from workbench.trajectory import Trajectory


def format_components(traj: Trajectory, proposal: Proposal | None = None, *, tool: str = "search") -> dict[str, float]:
    """Dr. Zero's format score of a proposer episode (see `workbench.rewards.drzero.drzero_format`).

    Turns are the episode's raw generations; the answer is checked against the source document
    (task metadata) plus every search result the episode received.
    """
    proposal = proposal if proposal is not None else proposal_of(traj)
    calls = [c for s in traj.steps for c in s.host_calls if c.name == tool]
    answered = [c for c in calls if c.error is None and c.result is not None]
    return drzero_format(
        [s.raw or "" for s in traj.steps],
        question=proposal.question if proposal else None,
        answer=proposal.answer if proposal else None,
        hops=traj.hops or 1,
        document=str(traj.task.metadata.get("document", "")),
        n_calls=len(calls),
        n_responses=len(answered),
        tool_results=[str(c.result) for c in answered],
    )


def solver_hits(attempts: Sequence[Trajectory], answer: str) -> int:
    """How many attempts' final answers exactly match `answer` (Search-R1 normalisation)."""
    return int(sum(exact_match(t.final_answer, [answer]) for t in attempts))


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


def attach_attempts(traj: Trajectory, attempts: Sequence[Trajectory], *, tool_count: str = "cells") -> None:
    """Record what the proposer's reward reads from its solver attempts, one entry per attempt:
    `solver_answers`, `solver_correct` (EM against the attempt's target, the proposer's answer),
    `executor_answers` (the same answers, Agent0's name) and `executor_tool_calls`
    (`workbench.rewards.agent0.tool_invocations`). Stored on the trajectory, so a rescore sees them."""
    answers = [answer_of(t) for t in attempts]
    traj.metadata.update(
        solver_answers=answers,
        solver_correct=[exact_match(a, t.task.golden_answers) for a, t in zip(answers, attempts, strict=True)],
        executor_answers=list(answers),
        executor_tool_calls=[a0.tool_invocations(t, tool_count) for t in attempts],
    )


def score_proposers(trajs: Sequence[Trajectory], spec: RewardSpec, batch: str) -> list[dict[str, float]]:
    """Score proposer trajectories together with `spec` (one batch for batch components such as
    Agent0's repetition); `metadata["reward_batch"] = batch` lets a rescore rebuild the batch."""
    for t in trajs:
        t.metadata["reward_batch"] = batch
    return spec.score_many(list(trajs))


__all__ = [
    "Vote",
    "attach_attempts",
    "format_components",
    "in_band",
    "majority_vote",
    "repetition_shares",
    "score_proposers",
    "solver_hits",
    "uncertainty",
]
