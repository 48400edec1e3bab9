"""The CPU demo, stage by stage: world → tiny model → teacher → SFT → evaluate → self-evolution
with RL → evaluate again. Each stage prints what it did; stages that built something cache it
under `<run_dir>/cache/`, keyed by the settings that determine it, so a second run is quicker.

Everything is real: sandboxed kernels run every line of model-written code, search goes through
the host gateway, SFT and GRPO update the weights, the stores hold every trajectory.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.demo.config import DemoConfig
from workbench.demo.data import TEACHER_ID, in_task_order, sft_mix, teacher_id, tokenizer_texts
from workbench.demo.engine import demo_policy
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.policies.base import Policy

Printer = Callable[[str], None]


# Episodes end by turns and tokens, never by the clock: a slower or busier machine gets the same figures (the
# SmolLM2 evaluation's 16 concurrent episodes took over AgentConfig's default 300 s on 2 cores).
DEMO_EPISODE_WALL_S = 6 * 3600.0


@dataclass
class DemoResult:
    """What `run_demo` returns: the run dir, held-out rows per hop after SFT and after RL, the evolution metrics, each
    stage's seconds and, for a pretrained model, each scored evaluation."""

    run_dir: Path
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    evolution: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def accuracy(self, which: str, hops: str = "all") -> float:
        rows = self.before if which == "before" else self.after
        return next((float(r["em"]) for r in rows if r["hops"] == hops), 0.0)


class Stages:
    def __init__(self, cfg: DemoConfig, out: Printer, fresh: bool) -> None:
        import torch

        from workbench.agent import AgentConfig
        from workbench.resolve import search_registry
        from workbench.search import BM25Retriever, Corpus
        from workbench.worlds import make_world

        torch.set_num_threads(cfg.torch_threads)
        self.cfg, self.out = cfg, out
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

    # -- stages ------------------------------------------------------------------------------
    def model0(self) -> Path:
        """A tokenizer trained on the world and the teacher's format, and a random tiny Qwen2."""
        from workbench.models.tiny import build_tiny_model
        from workbench.worlds.scripted.coder import world_coder

        c = self.cfg
        path = (
            self.cache
            / f"model0-{TEACHER_ID}-v2-{c.key('seed', 'world_size', 'vocab_size', 'n_layer', 'n_embd', 'n_head')}"
        )
        if not (path / "config.json").exists():
            # byte-level sampling: room for a whole cell, or the tokenizer never sees the teacher's code
            sample = self.run_agent(
                world_coder(), self.world.tasks("train")[:40], None, max_new_tokens=4096, max_context_tokens=16384
            )
            build_tiny_model(
                path,
                tokenizer_texts(self.world, sample),
                vocab_size=c.vocab_size,
                n_layer=c.n_layer,
                n_embd=c.n_embd,
                n_head=c.n_head,
                seed=c.seed,
            )
        return path

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

    def sft(self, model_path: Path, teacher: list) -> Path:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from workbench.policies import TokenizerCodec
        from workbench.train.sft import sft

        c = self.cfg
        sft_key = c.key(
            "seed",
            "world_size",
            "vocab_size",
            "n_layer",
            "n_embd",
            "n_head",
            "teacher_tasks",
            "give_up",
            "sft_copies",
            "sft_epochs",
            "sft_lr",
        )
        path = self.cache / f"sft-{self.teacher_id}-{sft_key}"
        if not (path / "config.json").exists():
            model = AutoModelForCausalLM.from_pretrained(model_path)
            tok = AutoTokenizer.from_pretrained(model_path)
            data = sft_mix(teacher, TokenizerCodec(tok), give_up=c.give_up, copies=c.sft_copies, seed=c.seed)
            losses = sft(model, tok, data, epochs=c.sft_epochs, lr=c.sft_lr, seed=c.seed)
            self.out(f"  {len(data)} SFT sequences, {len(losses)} steps, loss {losses[0]:.3f} → {losses[-1]:.4f}")
            model.save_pretrained(path)
            tok.save_pretrained(path)
        return path

    def evaluate(self, model: Any, tok: Any, name: str, cache_key: str | None = None) -> list[dict[str, Any]]:
        """Greedy held-out accuracy; with `cache_key`, reuse the result of the same weights."""
        from workbench.evaluate import evaluate
        from workbench.store import Store

        engine = "" if self.cfg.engine == "transformers" else f"-{self.cfg.engine}"
        cached = self.cache / f"eval-{cache_key}-{self.cfg.eval_tasks}{engine}.json" if cache_key else None
        if cached is not None and cached.exists() and (self.run / name / "trajectories.sqlite").exists():
            return json.loads(cached.read_text())["rows"]
        tasks = self.world.tasks("test")[: self.cfg.eval_tasks]
        with Store(self.run / name) as store:
            policy = demo_policy(model, tok, name, self.cfg.engine, self.cfg.seed)
            report = evaluate(
                tasks, policy, tools=self.tools, config=self.agent_config, store=store, concurrency=self.cfg.concurrency
            )
        report.save(self.run / name / "eval.json")
        if cached is not None:
            report.save(cached)
        return report.rows

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
        return DrZeroConfig(
            **{
                **dict(
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
                ),
                **fields,
            }
        )

    def evolve(self, model: Any, tok: Any) -> list[dict[str, Any]]:
        from workbench.demo.rl import demo_train_fn
        from workbench.evolve import run_drzero, world_proposer

        c = self.cfg
        config = self.drzero_config()
        solver = demo_policy(model, tok, "demo-solver", c.engine, c.seed)
        train_fn = demo_train_fn(model, tok, c, on_step=self.out)
        result = run_drzero(
            config,
            proposer_policy=world_proposer(seed=c.seed),
            solver_policy=solver,
            corpus=self.world.corpus(),
            retriever=self.retriever,
            train_fn=train_fn,
        )
        return [{"iteration": it.iteration, "qa_size": it.qa_size, **it.metrics} for it in result.iterations]


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


def solver_stages(st: Stages, out: Printer) -> tuple[Any, Any, Any, Any]:
    """Stages 1-4, shared by every demo: the tiny model, the teacher, SFT, held-out accuracy.
    Returns (tokenizer, SFT model, SFT model's dir, its evaluation)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.demo.report import hop_table
    from workbench.policies import TokenizerCodec

    with st.timed("1. tiny model: tokenizer trained on the world + a random 2-layer Qwen2"):
        model0 = st.model0()
        tok = AutoTokenizer.from_pretrained(model0)
        out(f"  {model0}  vocab {len(tok)}")
    with st.timed("2. teacher: the code-style scripted agent on train questions (real kernels)"):
        teacher = st.teacher(TokenizerCodec(tok))
        out(f"  {len(teacher)} trajectories, {sum(t.termination == 'submitted' for t in teacher)} submitted")
    with st.timed("3. SFT on teacher turns (most multi-hop examples answer after one hop)"):
        sft_path = st.sft(model0, teacher)
        model = AutoModelForCausalLM.from_pretrained(sft_path)
    with st.timed("4. held-out accuracy of the SFT model (greedy)"):
        before = st.evaluate(model, tok, "eval_sft", cache_key=sft_path.name)
        out(hop_table(before))
    return tok, model, sft_path, before


def run_demo(cfg: DemoConfig | None = None, *, fresh: bool = False, out: Printer = print) -> DemoResult:
    """Run every stage; see the module docstring."""
    from workbench.demo.report import evolution_lines, hop_table

    cfg = cfg or DemoConfig()
    st = Stages(cfg, out, fresh)
    out(f"workbench CPU demo: world seed {cfg.seed} ({len(st.world.corpus())} passages), run dir {st.run}")
    tok, model, _, before = solver_stages(st, out)
    with st.timed("5. self-evolution: scripted proposer (Dr. Zero prompts/rewards) + GRPO on the solver"):
        evolution = st.evolve(model, tok)
        for line in evolution_lines(evolution):
            out(line)
        model.config.workbench_agent = st.agent_config.model_settings()  # eval/run/serve-model run it as trained
        model.save_pretrained(st.run / "final_model")
        tok.save_pretrained(st.run / "final_model")
    with st.timed("6. held-out accuracy after RL (greedy)"):
        after = st.evaluate(model, tok, "eval_final")
        out(hop_table(after, before))
    result = DemoResult(st.run, before, after, evolution, st.seconds)
    (st.run / "summary.json").write_text(
        json.dumps(
            {"config": cfg.to_dict(), "before": before, "after": after, "evolution": evolution, "seconds": st.seconds},
            indent=2,
            default=str,
        )
    )
    from workbench.figures import record_demo_summary  # figure records: bench/results/demo.jsonl

    record_demo_summary(st.run / "summary.json", smoke=cfg.eval_tasks < DemoConfig().eval_tasks)
    gain = result.accuracy("after") - result.accuracy("before")
    out(
        f"\nheld-out accuracy {result.accuracy('before'):.1%} → {result.accuracy('after'):.1%} "
        f"({gain * 100:+.1f} points) in {sum(st.seconds.values()) / 60:.1f} min; run dir {st.run}"
    )
    out(f"look at it: workbench show {st.run / 'eval_final'}   |   notebooks/00_teaching_demo.ipynb")
    return result


__all__ = ["DemoResult", "run_demo", "solver_stages"]
