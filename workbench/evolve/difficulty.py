"""A proposer's difficulty on fixed prompts against a given solver: what the co-evolution checks compare.

    scores = prompt_difficulty(phases, mode, proposer_policy, solver_policy, prompts,
                               samples=2, attempts=5, phase="check_first", iteration=-1)
    scores.per_prompt      # per prompt: the mean difficulty of its samples (an invalid question scores 0)
    scores.by_hop()        # per requested hop count: samples, valid share, mean difficulty, solver pass rate
    scores.by_hop(key=f)   # the same per f(sample), e.g. the hops its question actually has

Each prompt is sampled `samples` times (episode i seeded with the proposer config's seed + i, so the same
prompts in the same order get the same seeds whatever the weights), the mode's gate marks the valid
questions, the solver attempts each one `attempts` times, and the mode's proposer reward scores them
(Dr. Zero: 0.5·format + difficulty `1(0<k<n)·(n−k)/(n−1)`). The episodes are recorded in the phases' store as
iteration `iteration` with lineage `phase`, so the `EvolutionDashboard` shows them beside the run's own.
Run the same prompts with two proposers (or two solvers) and pair the per-prompt scores:
`workbench.evaluate.intervals.paired_change(first.per_prompt, last.per_prompt)`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from workbench.evolve.phases import Phases, Proposed
from workbench.trajectory import Task

if TYPE_CHECKING:
    from workbench.evolve.modes import Mode
    from workbench.policies.base import Policy

__all__ = ["PromptDifficulty", "prompt_difficulty"]


@dataclass
class PromptDifficulty:
    """The scored samples of fixed prompts, in prompt order."""

    per_prompt: list[float]  # mean difficulty of each prompt's samples
    items: list[Proposed]

    @property
    def mean(self) -> float:
        return sum(self.per_prompt) / max(len(self.per_prompt), 1)

    def by_hop(self, key: Callable[[Proposed], int] | None = None) -> dict[int, dict[str, float]]:
        """Per requested hop count (or per `key(sample)`): samples, the share whose question is valid, the mean
        difficulty (invalid: 0) and the solver's pass rate over the valid questions' attempts (0 with none)."""
        groups: dict[int, list[Proposed]] = defaultdict(list)
        for it in self.items:
            groups[it.hops if key is None else key(it)].append(it)
        rows = {}
        for hop, items in sorted(groups.items()):
            valid = [it for it in items if it.valid]
            correct = [float(c) for it in valid for c in it.traj.metadata.get("solver_correct", [])]
            rows[hop] = {
                "samples": float(len(items)),
                "valid": len(valid) / len(items),
                "difficulty": sum(float(it.rewards.get("difficulty", 0.0)) for it in items) / len(items),
                "solver_pass": sum(correct) / len(correct) if correct else 0.0,
            }
        return rows


def prompt_difficulty(
    phases: Phases,
    mode: Mode,
    proposer: Policy,
    solver: Policy,
    prompts: list[Task],
    *,
    samples: int,
    attempts: int,
    phase: str,
    iteration: int,
) -> PromptDifficulty:
    """`samples` proposer episodes per prompt, every valid question attempted `attempts` times by `solver`, scored
    with `mode`'s proposer reward and recorded; prompts are told apart by `metadata["prompt_index"]`."""
    tasks = [
        replace(t, id=f"{t.id}-{phase}-s{s}", metadata={**t.metadata, "sample": s, "iteration": iteration})
        for t in prompts
        for s in range(samples)
    ]
    items = phases.propose_sync(tasks, proposer, lineage={"phase": phase})
    mode.gate(items)
    phases.attempt_sync(items, solver, attempts, mode.solver_spec, lineage={"phase": phase})
    mode.score(items, batch=f"{phases.run_id}/{phase}")
    phases.record(items, mode.proposer_spec, provenance={"phase": phase})
    per_prompt: dict[int, list[float]] = defaultdict(list)
    for it in items:
        per_prompt[int(it.traj.task.metadata["prompt_index"])].append(float(it.rewards.get("difficulty", 0.0)))
    return PromptDifficulty([sum(v) / len(v) for _, v in sorted(per_prompt.items())], items)
