"""The self-evolution loop: `run_drzero` and `run_agent0` / `run_evolution` (plain synchronous code).

    from workbench.evolve import DrZeroConfig, run_drzero, world_proposer
    from workbench.worlds import make_world
    from workbench.worlds.scripted.solver import world_solver

    world = make_world(0, "small")
    result = run_drzero(DrZeroConfig(run_dir="runs/dz", prompts_per_iteration=8),
                        proposer_policy=world_proposer(noise=0.2), solver_policy=world_solver(noise=0.3),
                        corpus=world.corpus())
    result.iterations[0].qa_path          # runs/dz/iter_0/qa.jsonl
    result.store.metrics(name="evolve/difficulty/hop2")

Each iteration: (1) proposer update, if `train_fn` is given (Dr. Zero trains the proposer first,
against the current solver); (2) sample documents and hop counts, run proposer episodes, gate them,
run solver attempts, score the proposer, write the QA set to `<run>/iter_<i>/qa.jsonl`, log metrics;
(3) solver update on the QA set, if `train_fn` is given; (4) write `<run>/iter_<i>/state.json`.
`resume=True` skips iterations whose state file exists.

All episodes of a run go through one executor (`executor=`, else a `LocalExecutor` with the two
roles' tool sets, closed at the end), each trajectory recorded once by the run's `Recorder`.
Training hooks are called in this thread; the episode runners they get use the same executor.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from workbench.agent.executor import Executor
from workbench.contracts import EpisodeRunner, Scorer
from workbench.errors import ConfigError
from workbench.evolve.config import Agent0Config, DrZeroConfig, EvolveConfig
from workbench.evolve.modes import Mode, agent0_mode, drzero_mode
from workbench.evolve.phases import (
    Phases,
    PrecomputedReward,
    Proposed,
    ProposerEpisodes,
    SolverEpisodes,
    evolve_executor,
)
from workbench.evolve.proposer import proposer_task, proposer_tools, sample_documents, sample_hops, solver_tools
from workbench.policies.base import Policy
from workbench.trajectory import Task

if TYPE_CHECKING:
    from workbench.agent.local import LocalExecutor
    from workbench.search.corpus import Corpus
    from workbench.search.hits import Retriever
    from workbench.store import Store


@dataclass
class TrainRequest:
    """One update a `train_fn` is asked to run (see `workbench.evolve.training.trl_train_fn`)."""

    role: str  # "proposer" | "solver"
    estimator: str
    tasks: list[Task]
    episodes: EpisodeRunner[Policy]  # trajectories come back unscored: `reward` scores them
    reward: Scorer
    output_dir: Path
    iteration: int
    run_id: str
    store: Store
    group_size: int = 0  # rollouts per prompt/question the mode asks for (0: the TrainConfig's)


TrainFn = Callable[[TrainRequest], "dict[str, Any] | None"]

ITERATION_SEED_STRIDE = 7919
"""Iteration i of a run seeded s draws its documents and hops (or its synthesis seeds) from s * 7919 + i:
a prime stride, so runs seeded s and s + 1 share no iteration's draw below 7919 iterations."""


@dataclass
class IterationResult:
    iteration: int
    qa_path: Path
    qa_size: int
    proposer_ids: list[str]
    metrics: dict[str, float]
    training: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class EvolveResult:
    run_dir: Path
    run_id: str
    store: Store
    iterations: list[IterationResult] = field(default_factory=list)


def _resolve_corpus(
    corpus: Corpus | Sequence[dict[str, Any]] | str | Path | None, retriever: Retriever | None
) -> tuple[list[dict[str, Any]], Retriever]:
    from workbench.search import BM25Retriever, Corpus

    if corpus is None and retriever is not None and hasattr(retriever, "corpus"):
        corpus = getattr(retriever, "corpus")  # noqa: B009 - not part of the Retriever protocol
    if corpus is None:
        raise ConfigError(
            "pass corpus= (rows, a Corpus or a JSONL path) or a retriever with a .corpus: "
            "the proposer needs source documents"
        )
    if isinstance(corpus, (str, Path)):
        corpus = Corpus.from_jsonl(corpus)
    rows = list(corpus.rows) if isinstance(corpus, Corpus) else list(corpus)
    if retriever is None:
        retriever = BM25Retriever.build(
            corpus if isinstance(corpus, Corpus) else Corpus.from_rows(rows), show_progress=False
        )
    return rows, retriever


def _bar(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="evolve", unit="iter", disable=not enabled)


def run_evolution(
    config: EvolveConfig,
    mode: Mode,
    *,
    proposer_policy: Policy,
    solver_policy: Policy | None = None,
    corpus: Corpus | Sequence[dict[str, Any]] | str | Path | None = None,
    retriever: Retriever | None = None,
    store: Store | None = None,
    train_fn: TrainFn | None = None,
    resume: bool = False,
    executor: Executor | None = None,
) -> EvolveResult:
    """The loop of the module docstring, for either mode."""
    from workbench.store import Store

    if proposer_policy is None:
        raise ConfigError("proposer_policy is required (e.g. workbench.evolve.world_proposer())")
    if solver_policy is None and not config.shared_model:
        raise ConfigError("pass solver_policy=, or set shared_model=True to let the proposer solve too")
    solver = proposer_policy if config.shared_model or solver_policy is None else solver_policy
    rows, search = _resolve_corpus(corpus, retriever)
    run_dir, run_id = Path(config.run_dir), config.resolved_run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    store = store if store is not None else Store(run_dir)
    (run_dir / "evolve_config.json").write_text(json.dumps(config.to_dict(), indent=2, default=str))
    (run_dir / "reward_specs.json").write_text(
        json.dumps({"proposer": mode.proposer_spec.to_dict(), "solver": mode.solver_spec.to_dict()}, indent=2)
    )
    result = EvolveResult(run_dir, run_id, store)
    owned: LocalExecutor | None = None  # the executor built here, closed here
    if executor is None:
        executor = owned = evolve_executor(proposer_tools(search), solver_tools(search), config.concurrency)
    s_cfg = config.agent_config("solver")
    phases = Phases(executor, config.agent_config("proposer"), s_cfg, store, run_id)
    bar = _bar(config.iterations, config.progress)
    try:
        for i in range(config.iterations):
            state_path = run_dir / f"iter_{i}" / "state.json"
            if resume and state_path.is_file():
                result.iterations.append(_load_state(state_path))
            else:
                result.iterations.append(
                    _iteration(i, config, mode, phases, rows, proposer_policy, solver, train_fn, bar)
                )
            bar.update(1)
    finally:
        bar.close()
        if owned is not None:
            owned.close()
    return result


def _iteration(
    i: int,
    config: EvolveConfig,
    mode: Mode,
    phases: Phases,
    rows: list[dict[str, Any]],
    proposer_policy: Policy,
    solver: Policy,
    train_fn: TrainFn | None,
    bar: Any,
) -> IterationResult:
    """One iteration: proposer update, propose, gate, attempt, score, QA set, solver update, state."""
    store, run_id = phases.store, phases.run_id
    it_dir = Path(config.run_dir) / f"iter_{i}"
    it_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    store.log_event(run_id, "iteration_start", {"iteration": i, "mode": mode.name})
    prompts = _proposer_tasks(i, config, mode, rows)
    training: dict[str, Any] = {}
    if train_fn is not None:
        bar.set_postfix_str("proposer update")
        training.update(_train_proposer(i, config, mode, phases, prompts, solver, train_fn, it_dir))
    items = _propose_and_solve(i, config, mode, phases, prompts, proposer_policy, solver, bar)
    qa = mode.qa_set(items)
    qa_path = _write_jsonl(it_dir / "qa.jsonl", [dataclasses.asdict(t) for t in qa])
    metrics = {
        **mode.metrics(items),
        "evolve/qa_size": float(len(qa)),
        "evolve/solver_episodes": float(sum(len(it.attempts) for it in items)),
    }
    if train_fn is not None:
        bar.set_postfix_str("solver update")
        training["solver"] = (
            _train_solver(i, config, mode, phases, qa, train_fn, it_dir) if qa else {"skipped": "empty QA set"}
        )
    store.log_metrics(run_id, i, metrics)
    res = IterationResult(i, qa_path, len(qa), [it.traj.id for it in items], metrics, training, time.monotonic() - t0)
    _save_state(it_dir / "state.json", res)
    store.log_event(run_id, "iteration_end", {"iteration": i, "qa_size": len(qa), "training": training})
    bar.set_postfix_str(f"qa={len(qa)}")
    return res


def _proposer_tasks(i: int, config: EvolveConfig, mode: Mode, rows: list[dict[str, Any]]) -> list[Task]:
    """Iteration i's proposer prompts: sampled documents, each with a sampled hop count."""
    rng = random.Random(config.seed * ITERATION_SEED_STRIDE + i)
    docs = sample_documents(rows, config.prompts_per_iteration, rng, max_chars=config.max_document_chars)
    hops = sample_hops(config.hop_weights, len(docs), rng)
    return [
        proposer_task(d, h, iteration=i, mode=mode.name, prompt_index=j)
        for j, (d, h) in enumerate(zip(docs, hops, strict=True))
    ]


def _train_proposer(
    i: int,
    config: EvolveConfig,
    mode: Mode,
    phases: Phases,
    prompts: list[Task],
    solver: Policy,
    train_fn: TrainFn,
    it_dir: Path,
) -> dict[str, Any]:
    """The proposer update on this iteration's prompts; its training record and the solver episodes it ran."""
    runner = ProposerEpisodes(
        phases, solver_policy=None if config.shared_model else solver, attempts=config.solver_attempts, mode=mode
    )
    trained = train_fn(
        TrainRequest(
            "proposer",
            config.proposer_estimator,
            prompts,
            runner,
            PrecomputedReward(),
            it_dir / "proposer",
            i,
            phases.run_id,
            phases.store,
            config.group_size("proposer"),
        )
    )
    return {"proposer": trained, "proposer_solver_episodes": runner.solver_episodes}


def _propose_and_solve(
    i: int,
    config: EvolveConfig,
    mode: Mode,
    phases: Phases,
    prompts: list[Task],
    proposer_policy: Policy,
    solver: Policy,
    bar: Any,
) -> list[Proposed]:
    """Propose from each prompt (samples_per_prompt times), gate and select, let the solver attempt, score
    and record."""
    samples = [
        dataclasses.replace(t, id=f"{t.id}-s{s}", metadata={**t.metadata, "sample": s})
        for t in prompts
        for s in range(config.samples_per_prompt)
    ]
    bar.set_postfix_str("propose")
    items = phases.propose_sync(samples, proposer_policy, lineage={"iteration": i})
    mode.gate(items)
    mode.select(items)
    bar.set_postfix_str("solve")
    phases.attempt_sync(items, solver, config.solver_attempts, mode.solver_spec, lineage={"iteration": i})
    mode.score(items, batch=f"{phases.run_id}/iter_{i}")
    phases.record(items, mode.proposer_spec, provenance={"iteration": i})
    return items


def _train_solver(
    i: int, config: EvolveConfig, mode: Mode, phases: Phases, qa: list[Task], train_fn: TrainFn, it_dir: Path
) -> dict[str, Any] | None:
    """The solver update on this iteration's QA set."""
    runner = SolverEpisodes(phases.executor, phases.solver_config, run_id=phases.run_id, concurrency=config.concurrency)
    return train_fn(
        TrainRequest(
            "solver",
            config.solver_estimator,
            qa,
            runner,
            mode.solver_spec,
            it_dir / "solver",
            i,
            phases.run_id,
            phases.store,
            config.group_size("solver"),
        )
    )


async def arun_evolution(config: EvolveConfig, mode: Mode, **kwargs: Any) -> EvolveResult:
    """`run_evolution` from async code (in a worker thread, so this event loop stays free)."""
    import asyncio

    return await asyncio.to_thread(run_evolution, config, mode, **kwargs)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return path


def _save_state(path: Path, res: IterationResult) -> None:
    data = {**dataclasses.asdict(res), "qa_path": str(res.qa_path)}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)  # atomic: a crash never leaves half a checkpoint


def _load_state(path: Path) -> IterationResult:
    data = json.loads(path.read_text())
    data["qa_path"] = Path(data["qa_path"])
    return IterationResult(**data)


def run_drzero(
    config: DrZeroConfig | None = None,
    *,
    proposer_policy: Policy,
    solver_policy: Policy | None = None,
    corpus: Corpus | Sequence[dict[str, Any]] | str | Path | None = None,
    retriever: Retriever | None = None,
    store: Store | None = None,
    train_fn: TrainFn | None = None,
    resume: bool = False,
    executor: Executor | None = None,
    **overrides: Any,
) -> EvolveResult:
    """Dr. Zero self-evolution (see the module docstring); keyword overrides build/patch the config."""
    config = _config(DrZeroConfig, config, overrides)
    return run_evolution(
        config,
        drzero_mode(config),
        proposer_policy=proposer_policy,
        solver_policy=solver_policy,
        corpus=corpus,
        retriever=retriever,
        store=store,
        train_fn=train_fn,
        resume=resume,
        executor=executor,
    )


def run_agent0(
    config: Agent0Config | None = None,
    *,
    proposer_policy: Policy,
    solver_policy: Policy | None = None,
    corpus: Corpus | Sequence[dict[str, Any]] | str | Path | None = None,
    retriever: Retriever | None = None,
    store: Store | None = None,
    train_fn: TrainFn | None = None,
    resume: bool = False,
    executor: Executor | None = None,
    **overrides: Any,
) -> EvolveResult:
    """Agent0 self-evolution: curriculum reward, majority-vote pseudo-labels, band filter, executor ADPO."""
    config = _config(Agent0Config, config, overrides)
    return run_evolution(
        config,
        agent0_mode(config),
        proposer_policy=proposer_policy,
        solver_policy=solver_policy,
        corpus=corpus,
        retriever=retriever,
        store=store,
        train_fn=train_fn,
        resume=resume,
        executor=executor,
    )


ConfigT = TypeVar("ConfigT", DrZeroConfig, Agent0Config)


def _config(cls: type[ConfigT], config: ConfigT | None, overrides: dict[str, Any]) -> ConfigT:
    if config is None:
        return cls.from_dict(overrides)
    if not isinstance(config, cls):
        raise ConfigError(f"expected a {cls.__name__}, got {type(config).__name__}")
    if not overrides:
        return config
    data = {k: v for k, v in config.to_dict().items() if k != "mode"}
    return cls.from_dict(data, **overrides)


__all__ = [
    "EvolveResult",
    "IterationResult",
    "TrainFn",
    "TrainRequest",
    "arun_evolution",
    "run_agent0",
    "run_drzero",
    "run_evolution",
]
