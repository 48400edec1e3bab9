"""ASearcher's data loop as self-evolution: synthesized QAs become the solver's tasks.

    cfg = ASearcherConfig(run_dir="runs/as", iterations=2, prompts_per_iteration=16)
    result = run_asearcher(cfg, graph=graph, synthesizer=ScriptedSynthesizer(), direct_policy=solver_policy,
                           retriever=retriever, train_fn=trl_train_fn(train_cfg, solver=(model, tok)))

Each iteration: `run_synthesis` from `prompts_per_iteration` seed pages (the synthesizer is the
proposer, stored with role "synthesizer" and its direct attempts as children); the accepted QAs
go through the `asearcher` mode (`workbench.evolve.modes.asearcher_mode`) into `iter_<i>/qa.jsonl`
with the direct accuracy as `metadata["self_consistency"]` (ADPO's p); then the solver update.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.configfile import config_field
from workbench.evolve.config import EvolveConfig, _spec
from workbench.evolve.loop import ITERATION_SEED_STRIDE, EvolveResult, IterationResult, TrainFn, TrainRequest
from workbench.rewards.registry import register_reward
from workbench.rewards.spec import RewardSpec
from workbench.synth.reward import synthesis_reward

if TYPE_CHECKING:
    from workbench.agent.local import ToolSet
    from workbench.evolve.modes import Mode
    from workbench.policies.base import Policy
    from workbench.search.hits import Retriever
    from workbench.store import Store
    from workbench.synth import SynthesisConfig
    from workbench.synth.pages import PageGraph
    from workbench.synth.synthesizers import Synthesizer
    from workbench.trajectory import Task


@dataclass
class ASearcherConfig(EvolveConfig):
    """ASearcher: a QA-synthesis agent writes the solver's questions; the solver trains on them (GRPO or ADPO)."""

    solver_attempts: int = config_field(8, "No-tool answers per verification (ASearcher: 8).")
    max_edits: int = config_field(16, "Edit turns per synthesis (ASearcher: 16).")
    min_hops: int = config_field(2, "Supporting facts an accepted QA needs at least.")
    max_direct_accuracy: float = config_field(0.25, "An edit is too easy above this share of right no-tool answers.")
    solver_estimator: str = config_field(
        "grpo", "Estimator of the solver update ('adpo' reads the direct accuracy as p)."
    )
    max_question_words: int = config_field(
        200, "QA-set questions are cut to this many words (synthesized ones run long)."
    )
    mode = "asearcher"

    def proposer_spec(self) -> RewardSpec:
        register_reward(synthesis_reward)
        return RewardSpec.from_dict(
            {
                "name": "synthesis",
                "description": "accepted × (1 − direct accuracy), recorded by the synthesis loop",
                "components": [{"name": "synth.recorded"}],
            }
        )

    def solver_spec(self) -> RewardSpec:
        return _spec("drzero_solver", lambda d: None)


def run_asearcher(
    config: ASearcherConfig,
    *,
    graph: PageGraph,
    synthesizer: Synthesizer,
    direct_policy: Policy,
    retriever: Retriever | None = None,
    store: Store | None = None,
    train_fn: TrainFn | None = None,
    solver_tools: ToolSet | None = None,
) -> EvolveResult:
    """The loop of the module docstring (sync)."""
    from workbench.evolve.modes import asearcher_mode
    from workbench.evolve.phases import Proposed
    from workbench.evolve.proposer import Proposal
    from workbench.evolve.proposer import solver_tools as search_tools
    from workbench.store import Store
    from workbench.synth import run_synthesis

    mode = asearcher_mode(config)
    run_dir, run_id = Path(config.run_dir), config.resolved_run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    store = store if store is not None else Store(run_dir)
    (run_dir / "evolve_config.json").write_text(json.dumps(config.to_dict(), indent=2, default=str))
    result = EvolveResult(run_dir, run_id, store)
    tools = solver_tools if solver_tools is not None else (search_tools(retriever) if retriever is not None else None)
    for i in range(config.iterations):
        t0 = time.monotonic()
        it_dir = run_dir / f"iter_{i}"
        synth = run_synthesis(
            graph, synthesizer, direct_policy, store=store, config=_synthesis_config(config, it_dir, run_id, i)
        )
        items = [
            Proposed(
                s.trajectory,
                Proposal(s.qa.question, s.qa.answer) if s.qa else None,
                list(s.attempts),
                dict(s.trajectory.rewards),
            )
            for s in synth.syntheses
        ]
        mode.gate(items)
        mode.select(items)
        qa = mode.qa_set(items)
        qa_path = it_dir / "qa.jsonl"
        with qa_path.open("w", encoding="utf-8") as fh:
            for t in qa:
                fh.write(json.dumps(dataclasses.asdict(t), ensure_ascii=False, default=str) + "\n")
        metrics = {**mode.metrics(items), **synth.stats(), "evolve/qa_size": float(len(qa))}
        training: dict[str, Any] = {}
        if train_fn is not None and qa and tools is not None:
            training["solver"] = _train_solver(config, mode, tools, qa, train_fn, store, run_id, it_dir, i)
        store.log_metrics(run_id, i, metrics)
        result.iterations.append(
            IterationResult(i, qa_path, len(qa), [it.traj.id for it in items], metrics, training, time.monotonic() - t0)
        )
    return result


def _synthesis_config(config: ASearcherConfig, it_dir: Path, run_id: str, i: int) -> SynthesisConfig:
    """Iteration i's synthesis settings, taken from the ASearcher config."""
    from workbench.synth import SynthesisConfig

    return SynthesisConfig(
        run_dir=str(it_dir / "synthesis"),
        run_id=run_id,
        seeds=config.prompts_per_iteration,
        max_edits=config.max_edits,
        min_hops=config.min_hops,
        direct_attempts=config.solver_attempts,
        max_direct_accuracy=config.max_direct_accuracy,
        seed=config.seed * ITERATION_SEED_STRIDE + i,
        iteration=i,
    )


def _train_solver(
    config: ASearcherConfig,
    mode: Mode,
    tools: ToolSet,
    qa: list[Task],
    train_fn: TrainFn,
    store: Store,
    run_id: str,
    it_dir: Path,
    i: int,
) -> dict[str, Any] | None:
    """The solver update on this iteration's QA set, with the search tools."""
    from workbench.evolve.phases import SolverEpisodes

    runner = SolverEpisodes(
        tools,
        config.agent_config("solver"),
        reward_spec=mode.solver_spec,
        store=store,
        run_id=run_id,
        concurrency=config.concurrency,
    )
    try:
        return train_fn(
            TrainRequest(
                "solver",
                config.solver_estimator,
                qa,
                runner,
                mode.solver_spec,
                it_dir / "solver",
                i,
                run_id,
                store,
                config.group_size("solver"),
            )
        )
    finally:
        runner.close()


__all__ = ["ASearcherConfig", "run_asearcher"]
