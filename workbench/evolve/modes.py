"""What differs between Dr. Zero and Agent0: the gate, the proposer reward, the QA set, the metrics.

A mode is four functions over the iteration's `Proposed` items (see `workbench.evolve.phases`):

| step      | Dr. Zero                                         | Agent0                                              |
|-----------|--------------------------------------------------|-----------------------------------------------------|
| gate      | format score > 0                                 | a question + answer, answer not inside the question |
| score     | 0.5·format + difficulty(k of n)                  | uncertainty(p) + γ·min(tools, C) − BLEU repetition  |
| QA set    | best-format valid sample per prompt; proposer's  | majority vote = pseudo-label; keep p in [low, high] |
|           | answer is the target                             | p rides along as `metadata["self_consistency"]`     |
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

from workbench.evolve.config import Agent0Config, DrZeroConfig, EvolveConfig
from workbench.evolve.phases import Proposed
from workbench.evolve.scoring import (agent0_reward, drzero_reward, format_components, in_band, majority_vote,
                                      repetition_shares, solver_hits)
from workbench.rewards.text import exact_match
from workbench.trajectory import Task


@dataclass
class Mode:
    name: str  # also the proposer prompt file: prompts/<name>_proposer.j2
    spec_name: str
    gate: Callable[[list[Proposed]], None]
    score: Callable[[list[Proposed]], None]
    qa_set: Callable[[list[Proposed]], list[Task]]
    metrics: Callable[[list[Proposed]], dict[str, float]]


def _cut(question: str, words: int) -> str:
    parts = question.split()
    return question if len(parts) <= words else " ".join(parts[:words])


def _qa_task(it: Proposed, answer: str, config: EvolveConfig, **meta: Any) -> Task:
    m = it.traj.task.metadata
    return Task(id=f"qa-{it.traj.id[:12]}", question=_cut(it.proposal.question, config.max_question_words),  # type: ignore[union-attr]
                golden_answers=[answer],
                metadata={"hops": it.hops, "origin": it.traj.id, "iteration": m.get("iteration"),
                          "doc_id": m.get("doc_id"), "source": f"evolve_{m.get('mode', '')}", **meta})


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
    out.update(_by_hop(valid, "solver_pass_rate",
                       lambda it: sum(t.reward or 0.0 for t in it.attempts) / len(it.attempts) if it.attempts else None))
    return out


# -- Dr. Zero -----------------------------------------------------------------------------------
def drzero_mode(config: DrZeroConfig) -> Mode:
    def gate(items: list[Proposed]) -> None:
        for it in items:
            it.extra["format"] = format_components(it.traj, it.proposal)
            it.valid = it.extra["format"]["format"] > 0

    def score(items: list[Proposed]) -> None:
        for it in items:
            k = solver_hits(it.attempts, it.proposal.answer) if it.valid and it.proposal else 0
            it.rewards = drzero_reward(it.extra["format"], k, len(it.attempts), format_weight=config.format_weight)

    def qa_set(items: list[Proposed]) -> list[Task]:
        best: dict[Any, Proposed] = {}
        for it in items:
            key = it.traj.task.metadata.get("prompt_index")
            if it.valid and (key not in best or it.extra["format"]["format"] > best[key].extra["format"]["format"]):
                best[key] = it
        return [_qa_task(it, it.proposal.answer, config, proposer_format=it.extra["format"]["format"])  # type: ignore[union-attr]
                for _, it in sorted(best.items(), key=lambda kv: str(kv[0]))]

    def metrics(items: list[Proposed]) -> dict[str, float]:
        out = _common_metrics(items)
        out.update(_by_hop(items, "format", lambda it: it.rewards.get("format")))
        out.update(_by_hop([it for it in items if it.valid], "difficulty", lambda it: it.rewards.get("difficulty")))
        return out

    return Mode("drzero", "drzero.proposer", gate, score, qa_set, metrics)


# -- Agent0 -------------------------------------------------------------------------------------
def agent0_mode(config: Agent0Config) -> Mode:
    def gate(items: list[Proposed]) -> None:
        for it in items:
            p = it.proposal
            it.valid = bool(p and p.question and p.answer and not exact_match(p.answer, [p.question])
                            and p.answer.lower() not in p.question.lower())

    def score(items: list[Proposed]) -> None:
        valid = [it for it in items if it.valid]
        shares = dict(zip((id(it) for it in valid),
                          repetition_shares([it.proposal.question for it in valid], config.repetition_threshold)))  # type: ignore[union-attr]
        for it in items:
            vote = majority_vote([t.final_answer for t in it.attempts])
            it.extra["vote"] = vote
            it.rewards = agent0_reward(it.traj, vote, it.proposal if it.valid else None, shares.get(id(it), 0.0),
                                       form=config.uncertainty_form, tool_weight=config.tool_weight,
                                       tool_cap=config.tool_cap)
            it.rewards["p_valid"] = vote.p_valid

    def band_p(it: Proposed) -> float:
        vote = it.extra["vote"]
        return vote.p_valid if config.p_denominator == "valid" else vote.p

    def qa_set(items: list[Proposed]) -> list[Task]:
        out = []
        for it in items:
            vote = it.extra.get("vote")
            if not it.valid or vote is None or vote.answer is None or not in_band(band_p(it), config.p_low, config.p_high):
                continue
            agrees = exact_match(vote.answer, [it.proposal.answer])  # type: ignore[union-attr]
            out.append(_qa_task(it, vote.answer, config, self_consistency=band_p(it), pseudo_label=True,
                                proposer_answer=it.proposal.answer, label_agrees_with_proposer=bool(agrees)))  # type: ignore[union-attr]
        return out

    def metrics(items: list[Proposed]) -> dict[str, float]:
        out = _common_metrics(items)
        valid = [it for it in items if it.valid]
        out.update(_by_hop(valid, "self_consistency", band_p))
        out.update(_by_hop(valid, "uncertainty", lambda it: it.rewards.get("uncertainty")))
        out["evolve/repetition"] = sum(it.rewards.get("repetition", 0.0) for it in valid) / max(len(valid), 1)
        out["evolve/in_band_rate"] = sum(in_band(band_p(it), config.p_low, config.p_high) for it in valid) / max(len(valid), 1)
        return out

    return Mode("agent0", "agent0.curriculum", gate, score, qa_set, metrics)


__all__ = ["Mode", "agent0_mode", "drzero_mode"]
