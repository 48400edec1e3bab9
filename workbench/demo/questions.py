"""Are a learned proposer's questions valid and answerable? Per hop count, from its trajectories.

    world_answer(world, "What is the birthplace of the director of Vel Orun?")   # follows the facts, or None
    question_shares(proposer_trajectories, world)   # {"1": {"proposals": 4, "valid": 0.75, "answerable": 0.5}, ...}

A question is *valid* when its episode passes Dr. Zero's format check (the gate of QA generation:
`format_components(...)["format"] > 0`: a question and an answer were submitted, the answer not
leaked into the question, the answer found in the document or a search result). It is *answerable*
when it is valid and the world answers it with the proposer's own answer: the question reads as
a relation chain (`What is the r_n of … of the r_1 of START?`, what the solver's scripted teacher
parses), and following those facts from START through the world gives the submitted answer
(Search-R1's exact match). A question about a fact the world lacks, or whose stated answer is
another fact's, is valid but not answerable.

The figures are grouped by the hop count a prompt *asked* for (what HRPO groups by). What was written can differ:
where a document's facts end, a proposer asks fewer hops. So each hop count also counts its valid questions by the
length of the chain they read as (`chain2: 3.0` means three valid questions read as 2-hop chains; a valid question
that reads as no chain is not counted).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from workbench.trajectory import Trajectory
from workbench.worlds.schema import RELATIONS
from workbench.worlds.world import World

RELATION_OF_PHRASE = {relation.phrase: name for name, relation in RELATIONS.items()}


def _parse_chain(question: str) -> tuple[str, list[str]] | None:
    """(START, [r_1, …, r_n]) of `What is the r_n of … of the r_1 of START?`, or None."""
    from workbench.worlds.scripted.solver import parse_chain_question

    return parse_chain_question(f"Task: {question.strip()}")


def chain_length(question: str) -> int | None:
    """How many relations the question's chain follows (`What is the r_2 of the r_1 of START?` → 2), or None."""
    parsed = _parse_chain(question)
    return None if parsed is None else len(parsed[1])


def world_answer(world: World, question: str) -> str | None:
    """The world's answer to a relation-chain question, or None when it reads as none or names a
    fact the world lacks."""
    parsed = _parse_chain(question)
    if parsed is None:
        return None
    entity, phrases = parsed
    try:
        for phrase in phrases:
            entity = world.lookup(entity, RELATION_OF_PHRASE[phrase])
    except KeyError:  # an unknown entity or relation phrase, or a relation its entity type lacks
        return None
    return entity


def question_check(traj: Trajectory, world: World) -> tuple[bool, bool]:
    """(valid, answerable) of one proposer episode; see the module docstring."""
    valid, answerable, _ = _checked(traj, world)
    return valid, answerable


def _checked(traj: Trajectory, world: World) -> tuple[bool, bool, int | None]:
    """`question_check`'s (valid, answerable), and a valid question's chain length (None: no chain, or not valid)."""
    from workbench.evolve.proposer import proposal_of
    from workbench.evolve.scoring import format_components
    from workbench.rewards.text import exact_match

    proposal = proposal_of(traj)
    if proposal is None or format_components(traj, proposal)["format"] <= 0:
        return False, False, None
    answer = world_answer(world, proposal.question)
    answerable = answer is not None and exact_match(answer, [proposal.answer]) == 1.0
    return True, answerable, chain_length(proposal.question)


def question_shares(trajs: Sequence[Trajectory], world: World) -> dict[str, dict[str, float]]:
    """Per hop count asked (and "all"): proposals, the shares of them that are valid and answerable, and the valid
    ones counted by the chain length they read as (`chainK`)."""
    groups: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    chains: dict[str, Counter[str]] = defaultdict(Counter)
    for traj in trajs:
        valid, answerable, length = _checked(traj, world)
        for hop in (str(traj.hops or 1), "all"):
            groups[hop].append((valid, answerable))
            chains[hop].update([f"chain{length}"] * (length is not None))
    return {
        hop: {
            "proposals": float(len(checks)),
            "valid": sum(v for v, _ in checks) / len(checks),
            "answerable": sum(a for _, a in checks) / len(checks),
            **{key: float(n) for key, n in sorted(chains[hop].items())},
        }
        for hop, checks in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0]))
    }


def chain_counts(batches: Sequence[dict[str, dict[str, float]]], hop: str) -> dict[int, int]:
    """Valid questions of one asked hop count by the chain length they read as, summed over batches."""
    total: Counter[int] = Counter()
    for batch in batches:
        for key, n in batch.get(hop, {}).items():
            if key.startswith("chain"):
                total[int(key.removeprefix("chain"))] += round(n)
    return dict(sorted(total.items()))


def question_counts(batches: Sequence[dict[str, dict[str, float]]], hop: str) -> tuple[int, int, int]:
    """(proposals, valid, answerable) of one hop count, summed over batches of `question_shares` figures."""
    rows = [b[hop] for b in batches if hop in b and "valid" in b[hop]]
    n = sum(r["proposals"] for r in rows)
    return (
        round(n),
        round(sum(r["proposals"] * r["valid"] for r in rows)),
        round(sum(r["proposals"] * r["answerable"] for r in rows)),
    )


def question_lines(iterations: Sequence[dict[str, Any]]) -> list[str]:
    """Per iteration and hop: how many proposer questions were valid and answerable, in the HRPO
    rollouts (every step together) and in QA generation."""
    lines = []
    for it in iterations:
        rollouts = (it.get("proposer_update") or {}).get("rollouts") or []
        qa = it.get("questions") or {}
        lines.append(f"  iteration {it['iteration']}: proposer questions that are valid / valid and answerable")
        hops = sorted({h for b in [*rollouts, qa] for h in b}, key=lambda h: (h == "all", h))
        for hop in hops:
            parts = [
                (name, question_counts(batches, hop)) for name, batches in (("HRPO rollouts", rollouts), ("QA", [qa]))
            ]
            shown = [f"{name} {v} / {a} of {n}" for name, (n, v, a) in parts if n]
            chains = chain_counts([*rollouts, qa], hop)
            written = ", ".join(f"{k}-hop {n}" for k, n in chains.items())
            lines.append(
                f"    hop {hop}: " + " | ".join(shown) + (f" (valid ones, by chain length: {written})" * bool(chains))
            )
    return lines


def question_summary(iterations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `question_lines` prints, as rows for summary.json: per iteration and hop, the counts."""
    rows = []
    for it in iterations:
        rollouts = (it.get("proposer_update") or {}).get("rollouts") or []
        qa = it.get("questions") or {}
        hops = sorted({h for b in [*rollouts, qa] for h in b}, key=lambda h: (h == "all", h))
        keys = ("proposals", "valid", "answerable")
        rows.append(
            {
                "iteration": it["iteration"],
                "hrpo_rollouts": {h: dict(zip(keys, question_counts(rollouts, h), strict=True)) for h in hops},
                "qa_generation": {h: dict(zip(keys, question_counts([qa], h), strict=True)) for h in hops},
                "chain_hops": {h: chain_counts([*rollouts, qa], h) for h in hops},
            }
        )
    return rows


__all__ = [
    "chain_counts",
    "chain_length",
    "question_check",
    "question_counts",
    "question_lines",
    "question_shares",
    "question_summary",
    "world_answer",
]
