"""What differs between Dr. Zero and Agent0: the gate, the reward specs, the QA set, the metrics.

A mode is a few functions over the iteration's `Proposed` items (see `workbench.evolve.phases`) and
two `workbench.rewards` specs, the single source of every stored reward:

| step      | Dr. Zero                                         | Agent0                                              |
|-----------|--------------------------------------------------|-----------------------------------------------------|
| gate      | format score > 0                                 | a question + answer, answer not inside the question |
| select    | best-format sample per prompt (paper: of 5)      | every valid sample                                  |
| proposer  | `drzero_proposer`: 0.5·format + difficulty       | `agent0_paper`: max(0, R_unc + 0.6·R_tool − R_rep), |
|  reward   |                                                  | or `agent0` (the code's form)                       |
| solver    | `drzero_solver`: EM against the target           | `agent0_executor`: EM against the pseudo-label      |
| QA set    | the selected samples; proposer's answer = target | majority vote = pseudo-label; keep p in [low, high] |
|           |                                                  | p rides along as `metadata["self_consistency"]`     |

Solver attempts are recorded on the proposer (`scoring.attach_attempts`), so `rescore(store, name)`
with the stored spec name reproduces every stored reward.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.evolve.config import Agent0Config, DrZeroConfig, EvolveConfig
from workbench.evolve.phases import Proposed
from workbench.evolve.scoring import attach_attempts, format_components, in_band, majority_vote, score_proposers
from workbench.rewards.agent0 import answer_leaks
from workbench.rewards.spec import RewardSpec
from workbench.rewards.text import exact_match
from workbench.trajectory import Task


@dataclass
class Mode:
    name: str  # also the proposer prompt file: prompts/<name>_proposer.j2
    proposer_spec: RewardSpec
    solver_spec: RewardSpec
    gate: Callable[[list[Proposed]], None]
    select: Callable[[list[Proposed]], None]  # which valid samples the solver attempts (QA generation)
    qa_set: Callable[[list[Proposed]], list[Task]]
    metrics: Callable[[list[Proposed]], dict[str, float]]
    tool_count: str = "cells"  # what an attempt's tool invocations count (Agent0's R_tool)

    @property
    def spec_name(self) -> str:
        return self.proposer_spec.name

    def score(self, items: list[Proposed], batch: str = "") -> None:
        """Record each item's attempts on its trajectory and score the items as one batch."""
        for it in items:
            if it.proposal is not None:  # what the reward components read as question and answer
                it.traj.metadata["question"], it.traj.final_answer = it.proposal.question, it.proposal.answer
            attach_attempts(it.traj, it.attempts, tool_count=self.tool_count)
        scores = score_proposers([it.traj for it in items], self.proposer_spec, batch or uuid.uuid4().hex[:12])
        for it, rewards in zip(items, scores, strict=True):
            it.rewards = rewards


def _cut(question: str, words: int) -> str:
    parts = question.split()
    return question if len(parts) <= words else " ".join(parts[:words])


def _qa_task(it: Proposed, answer: str, config: EvolveConfig, **meta: Any) -> Task:
    m = it.traj.task.metadata
    return Task(
        id=f"qa-{it.traj.id[:12]}",
        question=_cut(it.proposal.question, config.max_question_words),  # type: ignore[union-attr]
        golden_answers=[answer],
        metadata={
            "hops": it.hops,
            "origin": it.traj.id,
            "iteration": m.get("iteration"),
            "doc_id": m.get("doc_id"),
            "source": f"evolve_{m.get('mode', '')}",
            **meta,
        },
    )


def _by_hop(items: list[Proposed], name: str, value: Callable[[Proposed], float | None]) -> dict[str, float]:
    groups: dict[int, list[float]] = defaultdict(list)
    for it in items:
        v = value(it)
        if v is not None:
            groups[it.hops].append(float(v))
    out = {f"evolve/{name}/hop{h}": sum(v) / len(v) for h, v in sorted(groups.items())}
    flat = [x for v in groups.values() for x in v]
    if flat:
        out[f"evolve/{name}"] = sum(flat) / len(flat)
    return out


def _common_metrics(items: list[Proposed]) -> dict[str, float]:
    valid = [it for it in items if it.valid]
    out = {"evolve/proposals": float(len(items)), "evolve/valid_rate": len(valid) / max(len(items), 1)}
    for h in sorted({it.hops for it in items}):
        out[f"evolve/question_mix/hop{h}"] = sum(it.hops == h for it in valid) / max(len(valid), 1)
    out.update(_by_hop(items, "proposer_reward", lambda it: it.rewards.get("total")))
    out.update(
        _by_hop(
            valid,
            "solver_pass_rate",
            lambda it: sum(t.reward or 0.0 for t in it.attempts) / len(it.attempts) if it.attempts else None,
        )
    )
    return out


# -- Dr. Zero -----------------------------------------------------------------------------------
def drzero_mode(config: DrZeroConfig) -> Mode:
    def gate(items: list[Proposed]) -> None:
        for it in items:
            it.extra["format"] = format_components(it.traj, it.proposal)
            it.valid = it.extra["format"]["format"] > 0

    def select(items: list[Proposed]) -> None:
        """Keep the best-format valid sample of each prompt (the first one on ties)."""
        best: dict[Any, Proposed] = {}
        for it in items:
            key = it.traj.task.metadata.get("prompt_index")
            if it.valid and (key not in best or it.extra["format"]["format"] > best[key].extra["format"]["format"]):
                best[key] = it
        chosen = {id(it) for it in best.values()}
        for it in items:
            it.chosen = id(it) in chosen

    def qa_set(items: list[Proposed]) -> list[Task]:
        kept = [it for it in items if it.valid and it.chosen]
        return [
            _qa_task(it, it.proposal.answer, config, proposer_format=it.extra["format"]["format"])  # type: ignore[union-attr]
            for it in sorted(kept, key=lambda it: str(it.traj.task.metadata.get("prompt_index")))
        ]

    def metrics(items: list[Proposed]) -> dict[str, float]:
        out = _common_metrics(items)
        out.update(_by_hop(items, "format", lambda it: it.rewards.get("format")))
        out.update(
            _by_hop(
                [it for it in items if it.valid and it.attempts], "difficulty", lambda it: it.rewards.get("difficulty")
            )
        )
        return out

    return Mode("drzero", config.proposer_spec(), config.solver_spec(), gate, select, qa_set, metrics)


# -- Agent0 -------------------------------------------------------------------------------------
def _agent0_gate(items: list[Proposed]) -> None:
    """Valid: a question and an answer, the answer not given away in the question."""
    for it in items:
        p = it.proposal
        it.valid = bool(p and p.question and p.answer and not answer_leaks(p.question, p.answer))


def _choose_all(items: list[Proposed]) -> None:
    for it in items:
        it.chosen = True


def agent0_mode(config: Agent0Config) -> Mode:
    def vote_of(it: Proposed) -> Any:
        return majority_vote(it.traj.metadata.get("executor_answers", []))

    def band_p(it: Proposed) -> float:
        vote = vote_of(it)
        return vote.p_valid if config.p_denominator == "valid" else vote.p

    def qa_set(items: list[Proposed]) -> list[Task]:
        out = []
        for it in items:
            vote = vote_of(it)
            if (
                not it.valid
                or it.proposal is None  # a valid item has one (the gate)
                or not it.attempts
                or vote.answer is None
                or not in_band(band_p(it), config.p_low, config.p_high)
            ):
                continue
            agrees = exact_match(vote.answer, [it.proposal.answer])
            out.append(
                _qa_task(
                    it,
                    vote.answer,
                    config,
                    self_consistency=band_p(it),
                    pseudo_label=True,
                    proposer_answer=it.proposal.answer,
                    label_agrees_with_proposer=bool(agrees),
                )
            )
        return out

    def metrics(items: list[Proposed]) -> dict[str, float]:
        out = _common_metrics(items)
        valid = [it for it in items if it.valid and it.attempts]
        out.update(_by_hop(valid, "self_consistency", band_p))
        out.update(_by_hop(valid, "uncertainty", lambda it: it.rewards.get("agent0.uncertainty")))
        out["evolve/repetition"] = sum(it.rewards.get("agent0.repetition", 0.0) for it in valid) / max(len(valid), 1)
        out["evolve/in_band_rate"] = sum(in_band(band_p(it), config.p_low, config.p_high) for it in valid) / max(
            len(valid), 1
        )
        return out

    return Mode(
        "agent0",
        config.proposer_spec(),
        config.solver_spec(),
        _agent0_gate,
        _choose_all,
        qa_set,
        metrics,
        tool_count=config.tool_count,
    )


# -- ASearcher ----------------------------------------------------------------------------------
def asearcher_mode(config: Any) -> Mode:
    """Synthesized QAs (`workbench.synth`) as solver tasks: an item is valid when its synthesis was
    accepted; its direct (no-tool) accuracy rides along as `metadata["self_consistency"]` for ADPO."""

    def record(it: Proposed) -> dict[str, Any]:
        return it.traj.metadata.get("synthesis") or {}

    def gate(items: list[Proposed]) -> None:
        for it in items:
            it.valid = bool(record(it).get("accepted") and it.proposal)

    def select(items: list[Proposed]) -> None:
        for it in items:
            it.chosen = True

    def qa_set(items: list[Proposed]) -> list[Task]:
        out = []
        for it in items:
            if it.valid and it.proposal is not None:  # a valid item has one (the gate)
                r = record(it)
                qa = r.get("qa") or {}
                task = _qa_task(
                    it,
                    it.proposal.answer,
                    config,
                    self_consistency=r.get("direct_accuracy"),
                    statements=qa.get("statements", []),
                    edit_history=r.get("edit_history", []),
                )
                task.metadata["hops"] = r.get("hops", it.hops)
                out.append(task)
        return out

    def metrics(items: list[Proposed]) -> dict[str, float]:
        valid = [it for it in items if it.valid]
        out = {"evolve/proposals": float(len(items)), "evolve/valid_rate": len(valid) / max(len(items), 1)}
        out.update(_by_hop(valid, "difficulty", lambda it: 1.0 - float(record(it).get("direct_accuracy") or 0.0)))
        return out

    return Mode("asearcher", config.proposer_spec(), config.solver_spec(), gate, select, qa_set, metrics)


__all__ = ["Mode", "agent0_mode", "asearcher_mode", "drzero_mode"]
