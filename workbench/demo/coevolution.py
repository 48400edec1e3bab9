"""Did both roles learn? The two checks that close a run where the proposer learns (`--proposer learned`).

    kept = RoleWeights.keep(st, solver, proposer)             # before self-evolution: each role's weights
    ...                                                       # self-evolution trains both
    check = proposer_check(st, solver, proposer, kept, config)
    check.line()   # proposer difficulty: 0.120 -> 0.250 (change +0.130 [+0.020, +0.240])
    heldout_change(st.run / "eval_sft", st.run / "eval_final").line()
                   # held-out accuracy: 30.0% -> 41.7% (change +11.7 [+1.7, +21.7])

1. **The proposer, against a frozen solver.** A better solver lowers the live difficulty reward, so the live
   figure alone cannot show the proposer improving. Before self-evolution each role's weights are kept on disk;
   after it, the proposer at its first weights and at its last writes questions for the same fixed prompts
   (`check_prompts`: seeded documents, the run's hop mix; episode i seeded alike in both), the solver at its
   first weights attempts every valid one `solver_attempts` times, and each prompt scores the mean Dr. Zero
   difficulty `1(0<k<n)·(n−k)/(n−1)` of its samples. The change is paired by prompt, with a seeded 95%
   percentile-bootstrap interval (`workbench.evaluate.intervals.paired_change`).
2. **The solver, on the held-out set.** Each held-out question's exact match after SFT and after RL (the
   evaluations' stores), paired by question the same way.

The check's episodes are stored under `<run>/coevolution_check` (phases `check_first` and `check_last`), so the
`EvolutionDashboard` and the viewer show them with their solver attempts.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from workbench.trajectory import Task

if TYPE_CHECKING:
    from workbench.demo.pipeline import Solver, Stages
    from workbench.evolve.difficulty import PromptDifficulty
    from workbench.evolve.phases import Proposed
    from workbench.policies.base import Policy

__all__ = ["CHECK_SEED", "HeldoutChange", "ProposerCheck", "RoleWeights", "check_prompts", "heldout_change"]

CHECK_SEED = "coevolution-check"
"""Seeds the check's documents and hop counts, apart from the teacher's and every iteration's prompts."""
Which = Literal["first", "last"]


class ProposerModel(Protocol):
    """A learned proposer as the checks use it: its model (tiny, or the adapters' base) and tokenizer."""

    model: Any
    tok: Any


@dataclass
class ProposerCheck:
    """Per prompt, the mean difficulty of the proposer's samples at its first and last weights, the frozen solver
    attempting; the paired change; each side's figures (`PromptDifficulty.by_hop`) per requested hop count and
    per the hops its question actually has (`by_chain`; 0: no question, or one that reads as no chain)."""

    first: list[float]
    last: list[float]
    change: float
    low: float
    high: float
    by_hop: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)
    by_chain: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)

    def line(self) -> str:
        """`proposer difficulty: A -> B (change D [LO, HI])`, for scripts."""
        a, b = (sum(v) / max(len(v), 1) for v in (self.first, self.last))
        return (
            f"proposer difficulty: {a:.3f} -> {b:.3f} (change {self.change:+.3f} [{self.low:+.3f}, {self.high:+.3f}])"
        )

    def chain_lines(self) -> list[str]:
        """Per chain length, first -> last weights: samples, the frozen solver's pass rate, mean difficulty."""
        first, last = self.by_chain.get("first", {}), self.by_chain.get("last", {})
        lines = ["  the check's samples by the hops their question has (first -> last weights; frozen solver):"]
        for hops in sorted(set(first) | set(last)):
            a, b = first.get(hops, {}), last.get(hops, {})
            label = "no chain" if hops == 0 else f"{hops} hop{'s' * (hops > 1)}"
            line = f"    {label:<11} {a.get('samples', 0):4.0f} -> {b.get('samples', 0):4.0f} samples"
            if hops:
                line += f"  pass {_share(a, 'solver_pass')} -> {_share(b, 'solver_pass')}"
                line += f"  difficulty {_value(a, 'difficulty')} -> {_value(b, 'difficulty')}"
            lines.append(line)
        return lines


def _share(row: dict[str, float], name: str) -> str:
    return f"{row[name]:4.0%}" if row else "   -"


def _value(row: dict[str, float], name: str) -> str:
    return f"{row[name]:.2f}" if row else "   -"


@dataclass
class HeldoutChange:
    """Exact match per held-out question after SFT and after RL (the same questions), and the paired change."""

    first: list[float]
    last: list[float]
    change: float
    low: float
    high: float

    def line(self) -> str:
        """`held-out accuracy: A% -> B% (change D [LO, HI])` (percentage points), for scripts."""
        a, b = (100 * sum(v) / max(len(v), 1) for v in (self.first, self.last))
        d, lo, hi = (100 * x for x in (self.change, self.low, self.high))
        return f"held-out accuracy: {a:.1f}% -> {b:.1f}% (change {d:+.1f} [{lo:+.1f}, {hi:+.1f}])"


def heldout_change(first: Path, last: Path, *, seed: int = 0) -> HeldoutChange:
    """The paired change between two evaluations' stores of the same questions (their `em` rewards)."""
    from workbench.evaluate.intervals import paired_change
    from workbench.store import Store

    def scores(path: Path) -> dict[str, float]:
        with Store.open_readonly(path) as store:
            return {t.task.id: float(t.rewards.get("em", 0.0)) for t in store.iter_trajectories()}

    a, b = scores(first), scores(last)
    if set(a) != set(b):
        raise ValueError(f"{first} and {last} evaluated different questions; pair only the same held-out set")
    ids = sorted(a)
    before, after = [a[i] for i in ids], [b[i] for i in ids]
    return HeldoutChange(before, after, *paired_change(before, after, seed=seed))


def check_prompts(st: Stages, n: int) -> list[Task]:
    """`n` proposer prompts over distinct documents, hop counts drawn from the run's hop mix, seeded by `CHECK_SEED`."""
    from workbench.evolve.proposer import proposer_task, sample_documents, sample_hops

    rng = random.Random(f"{CHECK_SEED}:{st.cfg.seed}")
    docs = sample_documents(st.world.corpus(), n, rng)
    hops = sample_hops(st.cfg.proposer_hop_weights, len(docs), rng)
    return [proposer_task(d, h, iteration=-1, prompt_index=j) for j, (d, h) in enumerate(zip(docs, hops, strict=True))]


@dataclass
class RoleWeights:
    """Each role's weights at the start of self-evolution, kept under `path`; `policies` samples the proposer at
    its first or last weights and the solver at its first."""

    path: Path

    @classmethod
    def keep(cls, st: Stages, solver: Solver, proposer: ProposerModel) -> RoleWeights:
        path = st.run / "iteration0"
        if solver.adapters is not None:
            for role in ("proposer", "solver"):
                solver.adapters.save(role, path)
        else:
            for role, model in (("proposer", proposer.model), ("solver", solver.model)):
                model.save_pretrained(path / role)
        return cls(path)

    @contextmanager
    def policies(
        self, st: Stages, solver: Solver, proposer: ProposerModel, which: Which
    ) -> Iterator[tuple[Policy, Policy]]:
        """(proposer at its `which` weights, solver at its first); with adapters, the live weights come back after."""
        from workbench.policies import TransformersPolicy

        adapters = solver.adapters
        if adapters is None:
            from transformers import AutoModelForCausalLM

            model = proposer.model if which == "last" else AutoModelForCausalLM.from_pretrained(self.path / "proposer")
            first = AutoModelForCausalLM.from_pretrained(self.path / "solver")
            yield (
                TransformersPolicy.from_model(model, proposer.tok, name=f"check-proposer-{which}"),
                TransformersPolicy.from_model(first, solver.tok, name="check-solver-first"),
            )
            return
        live = st.run / "check_live_adapters"
        for role in ("proposer", "solver"):
            adapters.save(role, live)
        try:
            adapters.load("solver", self.path)
            if which == "first":
                adapters.load("proposer", self.path)
            yield (
                adapters.policy("proposer", solver.tok, name=f"check-proposer-{which}", seed=st.cfg.seed),
                adapters.policy("solver", solver.tok, name="check-solver-first", seed=st.cfg.seed),
            )
        finally:
            for role in ("proposer", "solver"):
                adapters.load(role, live)


def proposer_check(
    st: Stages, solver: Solver, proposer: ProposerModel, kept: RoleWeights, config: Any, *, prompts: int, samples: int
) -> ProposerCheck:
    """Step 1 of the module docstring, with the run's Dr. Zero `config` (its agents, attempts and reward)."""
    from workbench.evaluate.intervals import paired_change
    from workbench.evolve.difficulty import prompt_difficulty
    from workbench.evolve.modes import drzero_mode
    from workbench.evolve.phases import Phases, evolve_executor
    from workbench.evolve.proposer import proposer_tools, solver_tools
    from workbench.store import Store

    fixed = check_prompts(st, prompts)
    mode = drzero_mode(config)
    executor = evolve_executor(proposer_tools(st.retriever), solver_tools(st.retriever), st.cfg.concurrency)
    scores: dict[str, PromptDifficulty] = {}
    sides: tuple[tuple[Which, int], ...] = (("first", -1), ("last", config.iterations))
    try:
        with Store(st.run / "coevolution_check") as store:
            phases = Phases(
                executor, config.agent_config("proposer"), config.agent_config("solver"), store, config.resolved_run_id
            )
            for which, iteration in sides:
                with kept.policies(st, solver, proposer, which) as (proposer_policy, solver_policy):
                    scores[which] = prompt_difficulty(
                        phases,
                        mode,
                        proposer_policy,
                        solver_policy,
                        fixed,
                        samples=samples,
                        attempts=config.solver_attempts,
                        phase=f"check_{which}",
                        iteration=iteration,
                    )
    finally:
        executor.close()
    first, last = scores["first"].per_prompt, scores["last"].per_prompt
    by_hop = {which: s.by_hop() for which, s in scores.items()}
    by_chain = {which: s.by_hop(key=_chain_hops) for which, s in scores.items()}
    return ProposerCheck(first, last, *paired_change(first, last, seed=st.cfg.seed), by_hop=by_hop, by_chain=by_chain)


def _chain_hops(item: Proposed) -> int:
    """The hops a sample's question actually has (0: no question, or one that reads as no chain)."""
    from workbench.demo.questions import chain_length

    return (chain_length(item.proposal.question) or 0) if item.proposal is not None else 0
