"""The demo, one stage sequence for every variant: solver → proposer → self-evolution → evaluate again.

    st = Stages(DemoConfig.preset("fast"), print, fresh=False, model=TinyModel(), proposer=ScriptedProposer())
    result = run_stages(st)             # what `workbench.demo.run_demo` does, for each variant

The variants are data, two fields of `Stages`: the solver's **model** (`TinyModel`: a tokenizer trained on
the world and a random tiny Qwen2; `PretrainedModel`: SmolLM2-135M-Instruct, in its chat template) and the
**proposer** (`ScriptedProposer`: Dr. Zero's prompts over real search; `LearnedProposer`: a model of its own,
SFT then HRPO). `run_demo` runs the same sequence for each:

1. `model.solver_stages`: the solver's model, the scripted teacher, SFT, held-out accuracy (and, pretrained,
   zero-shot accuracy first);
2. `proposer.stages`: the learned proposer's teacher, model and SFT (the scripted one has none);
3. self-evolution: `proposer.evolve` (Dr. Zero iterations, GRPO on the solver, HRPO on a learned proposer);
4. `model.final_eval`: held-out accuracy after RL; then `summary.json`.

Each stage prints what it did; stages that built something cache it under `<run_dir>/cache/`, keyed by the
settings that determine it, so a second run is quicker. Everything is real: sandboxed kernels run every line of
model-written code, search goes through the host gateway, SFT and RL update the weights, the stores hold every
trajectory.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from workbench.demo.config import DemoConfig
from workbench.demo.data import teacher_id
from workbench.demo.report import StageEval
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.policies.base import Policy
    from workbench.train.lora import RoleAdapters

Printer = Callable[[str], None]

# Episodes end by turns and tokens, never by the clock: a slower or busier machine gets the same figures (the
# SmolLM2 evaluation's 16 concurrent episodes took over AgentConfig's default 300 s on 2 cores).
DEMO_EPISODE_WALL_S = 6 * 3600.0
KV_CACHE_GIB = 2  # SmolLM2 keeps 46 KB a token: ~45k tokens, most of 60 concurrent episodes (vLLM queues the rest)


@dataclass
class DemoResult:
    """What `run_demo` returns: the run dir, held-out rows per hop after SFT and after RL, the evolution metrics, each
    stage's seconds and, for a pretrained model, each scored evaluation."""

    run_dir: Path
    before: list[dict[str, Any]]  # held-out rows per hop after SFT ...
    after: list[dict[str, Any]]  # ... and after RL
    evolution: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    stages: list[StageEval] = field(default_factory=list)  # a pretrained model's scored evaluations, in order
    changes: list[dict[str, Any]] = field(default_factory=list)  # ... and the changes between them

    def accuracy(self, which: str, hops: str = "all") -> float:
        rows = self.before if which == "before" else self.after
        return next((float(r["em"]) for r in rows if r["hops"] == hops), 0.0)


@dataclass
class Solver:
    """The solver as the stages hand it on: its model and tokenizer, its held-out evaluations so far."""

    model: Any
    tok: Any
    evals: list[Any] = field(default_factory=list)  # tiny: rows per hop; pretrained: `StageEval`s
    adapters: RoleAdapters | None = None  # pretrained with a learned proposer: one LoRA adapter per role
    policies: dict[str, Policy] = field(default_factory=dict)  # ... and what each role generates with
    sft_losses: list[float] = field(default_factory=list)


class ModelKind(Protocol):
    """The solver's model: `TinyModel` or `PretrainedModel` (`workbench.demo.models`)."""

    name: str

    def check(self, cfg: DemoConfig, proposer: ProposerKind) -> None: ...
    def solver_stages(self, st: Stages) -> Solver: ...
    def save_final(self, st: Stages, solver: Solver) -> None: ...
    def final_eval(self, st: Stages, solver: Solver) -> None: ...
    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]: ...
    def result(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> DemoResult: ...
    def closing_lines(self, st: Stages, result: DemoResult) -> list[str]: ...


class ProposerKind(Protocol):
    """Who writes the questions: `ScriptedProposer` or `LearnedProposer` (`workbench.demo.proposers`)."""

    name: str
    learned: bool

    def stages(self, st: Stages, solver: Solver) -> None: ...
    def evolve(self, st: Stages, solver: Solver) -> list[dict[str, Any]]: ...
    def save_final(self, st: Stages, solver: Solver) -> None: ...
    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]: ...
    def closing_lines(self, st: Stages) -> list[str]: ...


# What each variant prints as its title, its self-evolution stage and its last stage: (model, proposer) -> titles.
TITLES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("tiny", "scripted"): (
        "workbench CPU demo: world seed {seed} ({passages} passages), run dir {run}",
        "5. self-evolution: scripted proposer (Dr. Zero prompts/rewards) + GRPO on the solver",
        "6. held-out accuracy after RL (greedy)",
    ),
    ("tiny", "learned"): (
        "workbench CPU demo, both roles learning: world seed {seed} ({passages} passages), run dir {run}",
        "5. self-evolution, both roles learning: HRPO on the proposer, GRPO on the solver",
        "6. held-out accuracy after RL (greedy)",
    ),
    ("pretrained", "scripted"): (
        "workbench demo with SmolLM2-135M-Instruct: world seed {seed}, {eval_tasks} held-out questions",
        "4. self-evolution: scripted proposer (Dr. Zero) + GRPO on the solver",
        "5. held-out accuracy after RL (greedy)",
    ),
    ("pretrained", "learned"): (
        "workbench demo, both roles learning on SmolLM2-135M-Instruct: world seed {seed}, run dir {run}",
        "3. self-evolution, both roles learning: HRPO on the proposer's adapter, GRPO on the solver's",
        "4. held-out accuracy after RL (greedy)",
    ),
}


class Stages:
    """What every stage shares: the config, the world and its search tools, the agent's settings, the
    run dir and its cache, the stage timer; and the variant (`model`, `proposer`)."""

    def __init__(
        self,
        cfg: DemoConfig,
        out: Printer,
        fresh: bool,
        model: ModelKind,
        proposer: ProposerKind,
    ) -> None:
        import torch

        from workbench.agent import AgentConfig
        from workbench.resolve import search_registry
        from workbench.search import BM25Retriever, Corpus
        from workbench.worlds import make_world

        torch.set_num_threads(cfg.torch_threads)
        self.cfg, self.out = cfg, out
        self.model, self.proposer = model, proposer
        self.run = Path(cfg.run_dir)
        self.cache = self.run / "cache"
        if fresh and self.run.exists():
            shutil.rmtree(self.run)
        self.cache.mkdir(parents=True, exist_ok=True)
        self.world = make_world(cfg.seed, cfg.world_size)
        self.world.save(self.run / "world")
        self.retriever = BM25Retriever.build(Corpus.from_rows(self.world.corpus()), show_progress=False)
        self.tools = search_registry(self.retriever)
        self.agent_config = AgentConfig(
            max_steps=cfg.max_steps,
            max_context_tokens=2048,
            max_new_tokens=cfg.max_new_tokens,
            prompt="compact",
            temperature=0.0,
            seed=cfg.seed,
            wall_clock_s=DEMO_EPISODE_WALL_S,
            keep_notepads=cfg.keep_notepads,
        )
        self.seconds: dict[str, float] = {}

    def timed(self, name: str) -> _Timer:
        return _Timer(self, name)

    def titles(self) -> tuple[str, str, str]:
        from workbench.demo.modes import AGENT0_TITLES

        return (AGENT0_TITLES if self.cfg.mode == "agent0" else TITLES)[(self.model.name, self.proposer.name)]

    def run_agent(self, policy: Policy, tasks: list[Task], store_dir: Path | None, **config: Any) -> list[Trajectory]:
        from workbench.agent import NBAgent
        from workbench.store import Store

        store = Store(store_dir) if store_dir is not None else None
        try:
            agent = NBAgent(
                policy,
                tools=self.tools,
                config=self.agent_config.model_copy(update=config),
                store=store,
                concurrency=self.cfg.concurrency,
            )
            return agent.run(tasks)
        finally:
            if store is not None:
                store.close()

    @property
    def context_layout(self) -> str:
        """ "n" when notepad blocks stay in the context (`keep_notepads`), else "": in the name of every cache
        whose episodes it shapes."""
        return "n" if self.cfg.keep_notepads else ""

    @property
    def teacher_id(self) -> str:
        """The fingerprint of the teacher's cells (and the context layout its episodes were recorded in), in
        every cache key built from its episodes."""
        return teacher_id(self.cfg.compact_teacher) + self.context_layout

    def teacher(self, codec: Any) -> list:
        """The code-style teacher on train questions, token-exact in the model's codec."""
        from workbench.demo.data import in_task_order
        from workbench.store import Store
        from workbench.worlds.scripted.coder import world_coder

        c = self.cfg
        tasks = self.world.tasks("train")[: c.teacher_tasks]
        store_dir = (
            self.cache / f"teacher-{self.teacher_id}-{c.key('seed', 'world_size', 'vocab_size', 'teacher_tasks')}"
        )
        if (store_dir / "done").exists():
            with Store.open_readonly(store_dir) as store:
                return in_task_order(store.iter_trajectories(), tasks)  # the store holds them as they finished
        trajs = self.run_agent(world_coder(codec=codec, compact=c.compact_teacher), tasks, store_dir)
        (store_dir / "done").touch()
        return trajs

    def policy(self, model: Any, tok: Any, name: str) -> Policy:
        """What a stage samples from (`cfg.engine`): the live model, or the shared vLLM engine holding its weights."""
        if self.cfg.engine == "vllm":
            from workbench.policies.vllm_colocated import colocated_policy

            return colocated_policy(model, name=name, kv_cache_gib=KV_CACHE_GIB, seed=self.cfg.seed)
        from workbench.policies import TransformersPolicy

        return TransformersPolicy.from_model(model, tok, name=name)

    def evaluate(self, model: Any, tok: Any, name: str, cache_key: str | None = None) -> list[dict[str, Any]]:
        """Greedy held-out accuracy (rows per hop); with `cache_key`, reuse the result of the same weights."""
        from workbench.evaluate import evaluate
        from workbench.store import Store

        engine = "" if self.cfg.engine == "transformers" else f"-{self.cfg.engine}"
        cached = self.cache / f"eval-{cache_key}-{self.cfg.eval_tasks}{engine}.json" if cache_key else None
        if cached is not None and cached.exists() and (self.run / name / "trajectories.sqlite").exists():
            return json.loads(cached.read_text())["rows"]
        tasks = self.world.tasks("test")[: self.cfg.eval_tasks]
        with Store(self.run / name) as store:
            policy = self.policy(model, tok, name)
            report = evaluate(
                tasks, policy, tools=self.tools, config=self.agent_config, store=store, concurrency=self.cfg.concurrency
            )
        report.save(self.run / name / "eval.json")
        if cached is not None:
            report.save(cached)
        return report.rows

    def scored_eval(
        self,
        model: Any,
        tok: Any,
        name: str,
        cache_key: str | None = None,
        max_steps: int | None = None,
        policy: Policy | None = None,
    ) -> StageEval:
        """Greedy evaluation on the fixed held-out questions, each question's score and the turns' format kept
        (sampled from `model` through the configured engine, or from `policy`); with `cache_key`, reuse it for the
        same weights."""
        from workbench.evaluate import evaluate
        from workbench.evaluate.metrics import answer_scores
        from workbench.evaluate.turn_format import turn_format
        from workbench.store import Store

        steps = max_steps or self.cfg.max_steps
        tag = f"{self.cfg.eval_tasks}-{steps}x{self.cfg.max_new_tokens}-{self.cfg.engine}"
        tag += f"-{self.context_layout}" if self.context_layout else ""
        cached = self.cache / f"eval-{cache_key}-{tag}.json" if cache_key else None
        if cached is not None and cached.exists() and (self.run / name / "trajectories.sqlite").exists():
            return StageEval(**json.loads(cached.read_text()))
        shutil.rmtree(self.run / name, ignore_errors=True)
        with Store(self.run / name) as store:
            policy = policy or self.policy(model, tok, name)
            config = self.agent_config.model_copy(update={"max_steps": steps})
            report = evaluate(
                self.held_out(), policy, tools=self.tools, config=config, store=store, concurrency=self.cfg.concurrency
            )
        result = StageEval(
            name=name,
            rows=report.rows,
            correct={t.task.id: answer_scores(t)["em"] for t in report.trajectories},
            hops={t.task.id: int(t.hops or 0) for t in report.trajectories},
            format=turn_format(report.trajectories).to_dict(),
        )
        text = json.dumps(asdict(result), indent=2)
        (self.run / name / "eval.json").write_text(text)
        if cached is not None:
            cached.write_text(text)
        return result

    def held_out(self) -> list:
        """The fixed held-out questions: the first `eval_tasks` of the world's test split."""
        return self.world.tasks("test")[: self.cfg.eval_tasks]

    def drzero_config(self, *stale: str, **fields: Any) -> Any:
        """The demo's `DrZeroConfig` (sampling solver, CPU-sized), after clearing what RL rewrites:
        RL is re-run every time, so it starts clean; `stale` names more run-dir entries to clear."""
        from workbench.evolve import DrZeroConfig

        c = self.cfg
        for name in ("evolve", "eval_final", "final_model", *stale):
            shutil.rmtree(self.run / name, ignore_errors=True)
        solver_agent = {**self.agent_config.model_dump(), "temperature": c.rl_temperature, "top_p": c.rl_top_p}
        solver_agent.pop("seed", None)
        if c.rl_token_budget:
            solver_agent["token_budget"] = c.rl_token_budget
        base = dict(
            run_dir=str(self.run / "evolve"),
            iterations=c.iterations,
            prompts_per_iteration=c.proposer_prompts,
            samples_per_prompt=c.proposer_samples,
            solver_attempts=c.solver_attempts,
            solver_group_size=c.rl_generations,
            hop_weights=c.proposer_hop_weights,
            concurrency=c.concurrency,
            seed=c.seed,
            solver_agent=solver_agent,
        )
        return DrZeroConfig(**{**base, **fields})


class _Timer:
    def __init__(self, stages: Stages, name: str) -> None:
        self.stages, self.name = stages, name

    def __enter__(self) -> None:
        self.t0 = time.monotonic()
        self.stages.out(f"\n== {self.name}")

    def __exit__(self, *exc: object) -> None:
        dt = time.monotonic() - self.t0
        self.stages.seconds[self.name] = dt
        self.stages.out(f"   ({dt:.0f} s)")


def run_stages(st: Stages) -> DemoResult:
    """Every stage of `st`'s variant, in the one order; see the module docstring."""
    cfg, out = st.cfg, st.out
    header, evolve_title, final_title = st.titles()
    out(header.format(seed=cfg.seed, passages=len(st.world.corpus()), run=st.run, eval_tasks=cfg.eval_tasks))
    solver = st.model.solver_stages(st)
    st.proposer.stages(st, solver)
    with st.timed(evolve_title):
        evolution = st.proposer.evolve(st, solver)
        st.model.save_final(st, solver)
        st.proposer.save_final(st, solver)
    with st.timed(final_title):
        st.model.final_eval(st, solver)
    figures = (
        st.model.report(st, solver, evolution) | {"evolution": evolution} | st.proposer.report(st, solver, evolution)
    )
    write_summary(st.run / "summary.json", {"config": cfg.to_dict(), **figures, "seconds": st.seconds})
    from workbench.figures import record_demo_summary  # figure records: bench/results/demo.jsonl

    record_demo_summary(st.run / "summary.json", smoke=cfg.eval_tasks < DemoConfig().eval_tasks)
    result = st.model.result(st, solver, evolution)
    for line in st.model.closing_lines(st, result) + st.proposer.closing_lines(st):
        out(line)
    return result


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """The run's figures, as `summary.json`."""
    path.write_text(json.dumps(summary, indent=2, default=str))


__all__ = [
    "DEMO_EPISODE_WALL_S",
    "KV_CACHE_GIB",
    "TITLES",
    "DemoResult",
    "ModelKind",
    "Printer",
    "ProposerKind",
    "Solver",
    "Stages",
    "run_stages",
    "write_summary",
]
