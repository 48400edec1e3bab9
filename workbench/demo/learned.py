"""`python -m workbench.demo --proposer learned`: Dr. Zero with both roles learning, on CPU.

Stages 1–4 are the default demo's (the solver: tokenizer and tiny model, coder teacher, SFT, held-out
accuracy). Then the proposer gets a model of its own:

P1. the code-style proposer teacher (`workbench.worlds.scripted.coder_proposer`) writes questions for sampled
    documents and hop counts (Dr. Zero's 4:3:2:1) in real kernels with real search, once byte-level
    for the tokenizer, then token-exact in the proposer's codec. Its cells name no entity: one
    constant cell reads the document from `task` and defines `hop(relation)`, then each turn is
    `hop('<relation>')` with the relation copied from the options the last output lists, so a tiny
    model learns the shape exactly and its one free choice (which fact to follow) is what HRPO shapes;
P2. the proposer's tokenizer is trained on the world's text plus the proposer's prompts, turns and
    observations, and its tiny Qwen2 has the solver's architecture (a separate model: Dr. Zero's
    roles share one model, the demo's models each fit one job and one vocabulary);
P3. SFT on the teacher's episodes (`workbench.train.sft`).

Self-evolution then trains both: each iteration runs HRPO on the proposer (rollouts are proposer
episodes sampled from its live weights, scored 0.5·format + difficulty against the current solver's
attempts; hop groups of `proposer_hop_group` prompts), writes the QA set with the updated proposer,
and runs GRPO on the solver. Printed and stored per iteration and hop count: the proposer's format
score and difficulty (in its HRPO rollouts and in QA generation) and the solver's pass rate.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.demo.config import DemoConfig
from workbench.demo.hrpo import proposer_train_fn
from workbench.demo.pipeline import DEMO_EPISODE_WALL_S, DemoResult, Printer, Stages, solver_stages
from workbench.trajectory import Task, Trajectory
from workbench.worlds.scripted.coder_proposer import HOP_TURN, PLAN_TURN, STUCK_TURN

if TYPE_CHECKING:
    from workbench.evolve.loop import IterationResult, TrainFn
    from workbench.policies.base import Policy
    from workbench.store import Store

PROPOSER_PROMPT_SEED = "proposer-teacher"  # documents of the teacher's prompts: apart from each iteration's
PROPOSER_TEACHER_ID = hashlib.sha1((PLAN_TURN + HOP_TURN + STUCK_TURN).encode()).hexdigest()[:6]
"""Fingerprint of the proposer teacher's cells: part of every cache key built from its episodes."""


def proposer_agent(cfg: DemoConfig, **update: Any) -> dict[str, Any]:
    """AgentConfig keywords of every proposer episode (teacher, HRPO rollouts, QA generation). Like the
    solver's, they end by turns and tokens, never by the clock (`DEMO_EPISODE_WALL_S`): under AgentConfig's
    300 s default, SmolLM2's proposer episodes ended after their first 640-token turn on 2 cores."""
    return {
        "wall_clock_s": DEMO_EPISODE_WALL_S,
        "max_steps": cfg.max_steps,
        "max_context_tokens": cfg.proposer_context_tokens,
        "max_new_tokens": cfg.proposer_max_new_tokens,
        "prompt": "compact",
        "temperature": cfg.rl_temperature,
        "top_p": cfg.rl_top_p,
        "seed": cfg.seed,
        **update,
    }


def proposer_tokenizer_texts(world: Any, trajectories: Sequence[Any]) -> list[str]:
    """Text for the proposer's tokenizer: passages, world questions, and every proposer prompt
    (system and task, decoded from a byte-level run), turn and observation."""
    from workbench.policies.base import ByteCodec

    texts = [p["contents"] for p in world.corpus()] + [t.question for t in world.tasks("train")]
    for traj in trajectories:
        prompt = traj.steps[0].prompt_ids if traj.steps else None
        texts.append(ByteCodec().decode(prompt) if prompt else traj.task.question)
        for step in traj.steps:
            texts += [step.raw, step.observation_text]
    return texts


class LearnedStages(Stages):
    """The default demo's stages plus the proposer's: teacher, model, SFT, and evolution of both."""

    def proposer_prompts(self) -> list:
        from workbench.evolve.proposer import proposer_task, sample_documents, sample_hops

        c = self.cfg
        rng = random.Random(f"{PROPOSER_PROMPT_SEED}:{c.seed}")
        docs = sample_documents(self.world.corpus(), c.proposer_teacher_tasks, rng)
        hops = sample_hops(c.proposer_hop_weights, len(docs), rng)
        return [
            proposer_task(d, h, iteration=-1, prompt_index=j) for j, (d, h) in enumerate(zip(docs, hops, strict=True))
        ]

    def run_proposer(
        self, policy: Policy, tasks: list[Task], store_dir: Path | None, **config: Any
    ) -> list[Trajectory]:
        from workbench.agent import AgentConfig, NBAgent
        from workbench.evolve.proposer import proposer_tools
        from workbench.store import Store

        store = Store(store_dir) if store_dir is not None else None
        try:
            agent = NBAgent(
                policy,
                tools=proposer_tools(self.retriever),
                role="proposer",
                store=store,
                config=AgentConfig(**proposer_agent(self.cfg, **config)),
                concurrency=self.cfg.concurrency,
            )
            return agent.run(tasks)
        finally:
            if store is not None:
                store.close()

    def _proposer_key(self, *extra: str) -> str:
        return (
            PROPOSER_TEACHER_ID
            + "-"
            + self.cfg.key(
                "seed",
                "world_size",
                "proposer_teacher_tasks",
                "proposer_hop_weights",
                "proposer_context_tokens",
                "proposer_max_new_tokens",
                "max_steps",
                "proposer_vocab_size",
                "n_layer",
                "n_embd",
                "n_head",
                *extra,
            )
        )

    def proposer_model0(self) -> Path:
        """The proposer's tokenizer (world text + its prompts, turns, observations) and a random tiny Qwen2."""
        from workbench.models.tiny import build_tiny_model
        from workbench.worlds.scripted.coder_proposer import coder_proposer

        c = self.cfg
        path = self.cache / f"proposer-model0-{self._proposer_key()}"
        if not (path / "config.json").exists():
            sample = self.run_proposer(
                coder_proposer(seed=c.seed),
                self.proposer_prompts()[:60],
                None,
                max_new_tokens=4096,
                max_context_tokens=16384,
            )
            build_tiny_model(
                path,
                proposer_tokenizer_texts(self.world, sample),
                vocab_size=c.proposer_vocab_size,
                n_layer=c.n_layer,
                n_embd=c.n_embd,
                n_head=c.n_head,
                seed=c.seed,
            )
        return path

    def proposer_teacher(self, codec: Any) -> list:
        """The code-style proposer teacher on the teacher prompts, token-exact in the proposer's codec."""
        from workbench.demo.data import in_task_order
        from workbench.store import Store
        from workbench.worlds.scripted.coder_proposer import coder_proposer

        prompts = self.proposer_prompts()
        store_dir = self.cache / f"proposer-teacher-{self._proposer_key()}"
        if (store_dir / "done").exists():
            with Store.open_readonly(store_dir) as store:
                return in_task_order(store.iter_trajectories(), prompts)  # the store holds them as they finished
        trajs = self.run_proposer(coder_proposer(seed=self.cfg.seed, codec=codec), prompts, store_dir)
        (store_dir / "done").touch()
        return trajs

    def proposer_sft(self, model_path: Path, teacher: list) -> tuple[Path, list[float]]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from workbench.train.sft import sft

        c = self.cfg
        path = self.cache / f"proposer-sft-{self._proposer_key('proposer_sft_epochs', 'sft_lr')}"
        losses_file = path / "sft_losses.json"
        if not (path / "config.json").exists():
            model = AutoModelForCausalLM.from_pretrained(model_path)
            tok = AutoTokenizer.from_pretrained(model_path)
            losses = sft(model, tok, teacher, epochs=c.proposer_sft_epochs, lr=c.sft_lr, seed=c.seed)
            model.save_pretrained(path)
            tok.save_pretrained(path)
            losses_file.write_text(json.dumps(losses))
        losses = json.loads(losses_file.read_text())
        self.out(
            f"  {len(teacher)} proposer episodes, {len(losses)} SFT steps, loss {losses[0]:.3f} → {losses[-1]:.4f}"
        )
        return path, losses

    def evolve_both(self, solver: tuple[Any, Any], proposer: tuple[Any, Any]) -> list[dict[str, Any]]:
        """Dr. Zero iterations: HRPO on the proposer, QA generation, GRPO on the solver."""
        from workbench.evolve import run_drzero

        c = self.cfg
        config = self.drzero_config(
            "final_proposer",
            hop_weights=c.proposer_hop_weights,
            proposer_group_size=c.proposer_hop_group,
            proposer_agent=proposer_agent(c),
        )
        policies = self.role_policies(solver, proposer)
        result = run_drzero(
            config,
            proposer_policy=policies["proposer"],
            solver_policy=policies["solver"],
            corpus=self.world.corpus(),
            retriever=self.retriever,
            train_fn=self.both_train_fn(solver, proposer),
        )
        try:
            return [self.iteration_row(it, result.store) for it in result.iterations]
        finally:
            result.store.close()

    def role_policies(self, solver: tuple[Any, Any], proposer: tuple[Any, Any]) -> dict[str, Policy]:
        """What each role generates with in QA generation and solver attempts: its (model, tokenizer)."""
        from workbench.policies import TransformersPolicy

        return {
            "proposer": TransformersPolicy.from_model(*proposer, name="demo-proposer"),
            "solver": TransformersPolicy.from_model(*solver, name="demo-solver"),
        }

    def both_train_fn(self, solver: tuple[Any, Any], proposer: tuple[Any, Any]) -> TrainFn:
        """HRPO on the proposer's model, GRPO on the solver's."""
        from workbench.demo.rl import demo_train_fn

        c = self.cfg
        return proposer_train_fn(*proposer, c, demo_train_fn(*solver, c, on_step=self.out), on_step=self.out)

    def iteration_row(self, it: IterationResult, store: Store) -> dict[str, Any]:
        """One iteration's figures for the report and summary.json (`store`: the run's trajectories)."""
        return {
            "iteration": it.iteration,
            "qa_size": it.qa_size,
            **it.metrics,
            "proposer_update": it.training.get("proposer", {}),
            "solver_update": it.training.get("solver", {}),
        }


def proposer_lines(iterations: Sequence[dict[str, Any]]) -> list[str]:
    """Per iteration and hop: the proposer's format and difficulty in its HRPO rollouts (first step →
    last) and in QA generation, and the solver's pass rate on the QA-generation questions."""
    lines = []
    for it in iterations:
        rollouts = (it.get("proposer_update") or {}).get("rollouts") or []
        lines.append(f"  iteration {it['iteration']}: {it['qa_size']} questions in the QA set")
        hops = sorted(
            {k.rsplit("hop", 1)[1] for k in it if k.startswith("evolve/format/hop")}
            | {h for b in rollouts for h in b if h != "all"},
            key=int,
        )
        for h in hops:
            line = f"    hop {h}:"
            if rollouts:
                first, last = rollouts[0].get(h), rollouts[-1].get(h)
                show = lambda s, k: f"{s[k]:.2f}" if s else "  - "  # noqa: E731
                line += (
                    f" HRPO rollouts format {show(first, 'format')} → {show(last, 'format')}, "
                    f"difficulty {show(first, 'difficulty')} → {show(last, 'difficulty')} |"
                )
            line += (
                f" QA generation format {it.get(f'evolve/format/hop{h}', 0.0):.2f}, "
                f"difficulty {it.get(f'evolve/difficulty/hop{h}', 0.0):.2f}, "
                f"solver pass rate {it.get(f'evolve/solver_pass_rate/hop{h}', 0.0):5.1%}"
            )
            lines.append(line)
    return lines


def proposer_summary(iterations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-hop figures `proposer_lines` prints, as rows for summary.json."""
    rows = []
    for it in iterations:
        rollouts = (it.get("proposer_update") or {}).get("rollouts") or []
        hops = sorted({k.rsplit("hop", 1)[1] for k in it if k.startswith("evolve/format/hop")}, key=int)
        rows.append(
            {
                "iteration": it["iteration"],
                "qa_size": it["qa_size"],
                "hrpo_rollouts": rollouts,
                "per_hop": {
                    h: {
                        "format": it.get(f"evolve/format/hop{h}", 0.0),
                        "difficulty": it.get(f"evolve/difficulty/hop{h}", 0.0),
                        "solver_pass_rate": it.get(f"evolve/solver_pass_rate/hop{h}", 0.0),
                        "question_mix": it.get(f"evolve/question_mix/hop{h}", 0.0),
                    }
                    for h in hops
                },
                "format": it.get("evolve/format", 0.0),
                "difficulty": it.get("evolve/difficulty", 0.0),
                "valid_rate": it.get("evolve/valid_rate", 0.0),
            }
        )
    return rows


def run_learned_demo(cfg: DemoConfig | None = None, *, fresh: bool = False, out: Printer = print) -> DemoResult:
    """The default demo's solver stages, the proposer's teacher/model/SFT, then both roles learning."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.demo.report import hop_table
    from workbench.policies import TokenizerCodec

    cfg = cfg or DemoConfig(run_dir="runs/demo_learned")
    st = LearnedStages(cfg, out, fresh)
    out(
        f"workbench CPU demo, both roles learning: world seed {cfg.seed} ({len(st.world.corpus())} passages), "
        f"run dir {st.run}"
    )
    tok, model, _, before = solver_stages(st, out)
    with st.timed("P1-2. proposer: the code-style proposer teacher's episodes, its own tokenizer and tiny Qwen2"):
        p_model0 = st.proposer_model0()
        p_tok = AutoTokenizer.from_pretrained(p_model0)
        p_teacher = st.proposer_teacher(TokenizerCodec(p_tok))
        out(
            f"  {p_model0}  vocab {len(p_tok)}; {len(p_teacher)} teacher episodes, "
            f"{sum(t.termination == 'submitted' for t in p_teacher)} submitted"
        )
    with st.timed("P3. proposer SFT on the teacher's episodes"):
        p_sft, p_losses = st.proposer_sft(p_model0, p_teacher)
        p_model = AutoModelForCausalLM.from_pretrained(p_sft)
    with st.timed("5. self-evolution, both roles learning: HRPO on the proposer, GRPO on the solver"):
        evolution = st.evolve_both((model, tok), (p_model, p_tok))
        for line in proposer_lines(evolution):
            out(line)
        for name, (m, t) in (("final_model", (model, tok)), ("final_proposer", (p_model, p_tok))):
            m.save_pretrained(st.run / name)
            t.save_pretrained(st.run / name)
    with st.timed("6. held-out accuracy after RL (greedy)"):
        after = st.evaluate(model, tok, "eval_final")
        out(hop_table(after, before))
    result = DemoResult(st.run, before, after, evolution, st.seconds)
    summary = {
        "config": cfg.to_dict(),
        "proposer": "learned",
        "before": before,
        "after": after,
        "evolution": evolution,
        "proposer_per_iteration": proposer_summary(evolution),
        "proposer_sft_losses": [p_losses[0], p_losses[-1]],
        "seconds": st.seconds,
    }
    (st.run / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    gain = result.accuracy("after") - result.accuracy("before")
    out(
        f"\nheld-out accuracy {result.accuracy('before'):.1%} → {result.accuracy('after'):.1%} "
        f"({gain * 100:+.1f} points) in {sum(st.seconds.values()) / 60:.1f} min; run dir {st.run}"
    )
    return result


__all__ = [
    "LearnedStages",
    "proposer_agent",
    "proposer_lines",
    "proposer_summary",
    "proposer_tokenizer_texts",
    "run_learned_demo",
]
