"""Who writes the questions, the demo's second variant: `ScriptedProposer` (`make demo`) or `LearnedProposer`
(`--proposer learned`: Dr. Zero with both roles learning).

    Stages(cfg, print, fresh=False, model=TinyModel(), proposer=LearnedProposer())

**ScriptedProposer**: Dr. Zero's proposer prompts and rewards over real search in the world
(`workbench.evolve.world_proposer`); only the solver learns, by GRPO in each iteration.

**LearnedProposer**: the proposer is a model too. Its stages, after the solver's:

P1. the proposer style's teacher (`DemoConfig.proposer_style`, `workbench.demo.proposer_styles`) writes questions
    for sampled documents and hop counts in real kernels with real search, once byte-level for the tokenizer, then
    token-exact in the proposer's codec. Its cells name no entity: the code style's constant first cell (the hop
    style's kernel setup) reads the document from `task` and defines `hop(i)`, then each turn is one `hop(i)`
    (or, hop style, `ask()`), so what HRPO shapes is its free choices: which fact to follow (and when to ask);
P2. on the tiny model, the proposer's tokenizer is trained on the world's text plus the proposer's prompts,
    turns and observations, and its tiny Qwen2 has the solver's architecture (a separate model: Dr. Zero's roles
    share one model, the demo's models each fit one job and one vocabulary); on the pretrained model, the
    proposer is a LoRA adapter of its own on the solver's frozen base (`workbench.train.lora.RoleAdapters`);
P3. SFT on the teacher's episodes (`workbench.train.sft`).

Self-evolution then trains both: each iteration runs HRPO on the proposer (rollouts are proposer episodes sampled
from its live weights, scored 0.5·format + difficulty against the current solver's attempts; hop groups of
`proposer_hop_group` prompts), writes the QA set with the updated proposer, and runs GRPO on the solver. Printed
and stored per iteration and hop count: the proposer's format score and difficulty (in its HRPO rollouts and in
QA generation) and the solver's pass rate; with adapters also how many of its questions are valid and answerable
(`workbench.demo.questions`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.demo.coevolution import ProposerCheck, RoleWeights, heldout_change, proposer_check
from workbench.demo.config import DemoConfig
from workbench.demo.modes import (
    agent0_hop_stats,
    evolve_config,
    iteration_rows,
    mode_lines,
    mode_report,
    proposer_update_lines,
    run_mode,
)
from workbench.demo.pipeline import DEMO_EPISODE_WALL_S, Solver, Stages
from workbench.demo.proposer_styles import CODE_STYLE, PROPOSER_STYLES
from workbench.demo.questions import question_lines, question_shares, question_summary
from workbench.demo.report import proposer_lines, proposer_summary
from workbench.demo.rl import adapter_sft, demo_train_fn, hop_stats, proposer_train_fn
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.evolve.loop import IterationResult, TrainFn
    from workbench.policies.base import Policy
    from workbench.store import Store

PROPOSER_PROMPT_SEED = "proposer-teacher"  # documents of the teacher's prompts: apart from each iteration's
PROPOSER_TEACHER_ID = CODE_STYLE.fingerprint  # of the code-style teacher's cells; each style has its own


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
        **PROPOSER_STYLES[cfg.proposer_style].agent,
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


class ScriptedProposer:
    """Dr. Zero's scripted proposer (`world_proposer`): it has no stages of its own and never learns."""

    name = "scripted"
    learned = False

    def stages(self, st: Stages, solver: Solver) -> None:
        """None: the scripted proposer is ready as it is."""

    def evolve(self, st: Stages, solver: Solver) -> list[dict[str, Any]]:
        """Iterations of `cfg.mode` (Dr. Zero or Agent0): the scripted proposer writes questions, GRPO (Agent0:
        ADPO on the in-band questions' pseudo-labels) trains the solver on them."""
        from workbench.evolve import world_proposer

        c = st.cfg
        policy = st.policy(solver.model, solver.tok, "demo-solver")
        train_fn = demo_train_fn(solver.model, solver.tok, c, on_step=st.out)
        result = run_mode(
            st, evolve_config(st), proposer_policy=world_proposer(seed=c.seed), solver_policy=policy, train_fn=train_fn
        )
        rows = iteration_rows(st, result)
        for line in mode_lines(st, rows):
            st.out(line)
        return rows

    def save_final(self, st: Stages, solver: Solver) -> None:
        """Nothing: the scripted proposer has no weights."""

    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]:
        return mode_report(st, evolution)

    def closing_lines(self, st: Stages) -> list[str]:
        return []


class LearnedProposer:
    """A proposer with a model of its own (see the module docstring): its teacher, model and SFT, then HRPO in
    each iteration beside the solver's GRPO."""

    name = "learned"
    learned = True

    def __init__(self) -> None:
        self.model: Any = None
        self.tok: Any = None
        self.sft_losses: list[float] = []
        self.check: ProposerCheck | None = None  # Dr. Zero: the proposer against the frozen first solver
        self.closing: list[str] = []  # the checks' lines, printed last

    def stages(self, st: Stages, solver: Solver) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from workbench.policies import TokenizerCodec

        if solver.adapters is not None:
            self.adapter_stages(st, solver)
            return
        with st.timed(
            f"P1-2. proposer: the {st.cfg.proposer_style}-style teacher's episodes, its tokenizer, tiny Qwen2"
        ):
            model0 = self.model0(st)
            self.tok = AutoTokenizer.from_pretrained(model0)
            teacher = self.teacher(st, TokenizerCodec(self.tok))
            st.out(
                f"  {model0}  vocab {len(self.tok)}; {len(teacher)} teacher episodes, "
                f"{sum(t.termination == 'submitted' for t in teacher)} submitted"
            )
        with st.timed("P3. proposer SFT on the teacher's episodes"):
            sft_path = self.sft(st, model0, teacher)
            self.model = AutoModelForCausalLM.from_pretrained(sft_path)

    def adapter_stages(self, st: Stages, solver: Solver) -> None:
        """On a pretrained model: 2. the proposer teacher in the chat template, SFT of the proposer's adapter."""
        from workbench.policies import TokenizerCodec

        assert solver.adapters is not None
        with st.timed(f"2. proposer: the {st.cfg.proposer_style}-style proposer teacher in the chat template, SFT"):
            teacher = self.teacher(st, TokenizerCodec(solver.tok))
            submitted = sum(t.termination == "submitted" for t in teacher)
            st.out(f"  {len(teacher)} proposer teacher episodes, {submitted} submitted")
            epochs = st.cfg.proposer_sft_epochs
            _, self.sft_losses = adapter_sft(st, solver.adapters, "proposer", solver.tok, teacher, epochs, self.key(st))
        self.model, self.tok = solver.model, solver.tok

    def prompts(self, st: Stages) -> list:
        from workbench.evolve.proposer import proposer_task, sample_documents, sample_hops

        c = st.cfg
        rng = random.Random(f"{PROPOSER_PROMPT_SEED}:{c.seed}")
        docs = sample_documents(st.world.corpus(), c.proposer_teacher_tasks, rng)
        hops = sample_hops(c.proposer_hop_weights, len(docs), rng)
        mode = c.mode  # the prompt the proposer sees in the mode's iterations (Dr. Zero's or Agent0's)
        return [
            proposer_task(d, h, iteration=-1, mode=mode, prompt_index=j)
            for j, (d, h) in enumerate(zip(docs, hops, strict=True))
        ]

    def run_episodes(
        self, st: Stages, policy: Policy, tasks: list[Task], store_dir: Path | None, **config: Any
    ) -> list[Trajectory]:
        from workbench.agent import AgentConfig, NBAgent
        from workbench.evolve.proposer import proposer_tools
        from workbench.store import Store

        store = Store(store_dir) if store_dir is not None else None
        try:
            agent = NBAgent(
                policy,
                tools=proposer_tools(st.retriever),
                role="proposer",
                store=store,
                config=AgentConfig(**proposer_agent(st.cfg, **config)),
                concurrency=st.cfg.concurrency,
            )
            return agent.run(tasks)
        finally:
            if store is not None:
                store.close()

    def key(self, st: Stages, *extra: str) -> str:
        """The cache key of what the proposer's teacher episodes determine (and `extra` fields)."""
        names = ("seed", "world_size", "proposer_teacher_tasks", "proposer_hop_weights", "proposer_context_tokens")
        more = ("proposer_max_new_tokens", "max_steps", "proposer_vocab_size", "n_layer", "n_embd", "n_head")
        mode = ("mode",) if st.cfg.mode != "drzero" else ()  # Dr. Zero's keys as they were
        return PROPOSER_STYLES[st.cfg.proposer_style].fingerprint + "-" + st.cfg.key(*names, *more, *mode, *extra)

    def model0(self, st: Stages) -> Path:
        """The proposer's tokenizer (world text + its prompts, turns, observations) and a random tiny Qwen2."""
        from workbench.models.tiny import build_tiny_model

        c = st.cfg
        path = st.cache / f"proposer-model0-{self.key(st)}"
        if not (path / "config.json").exists():
            teacher, tasks = PROPOSER_STYLES[c.proposer_style].teacher(seed=c.seed), self.prompts(st)[:60]
            sample = self.run_episodes(st, teacher, tasks, None, max_new_tokens=4096, max_context_tokens=16384)
            texts = proposer_tokenizer_texts(st.world, sample)
            build_tiny_model(
                path,
                texts,
                vocab_size=c.proposer_vocab_size,
                n_layer=c.n_layer,
                n_embd=c.n_embd,
                n_head=c.n_head,
                seed=c.seed,
            )
        return path

    def teacher(self, st: Stages, codec: Any) -> list:
        """The proposer style's teacher on the teacher prompts, token-exact in the proposer's codec."""
        from workbench.demo.data import in_task_order
        from workbench.store import Store

        prompts = self.prompts(st)
        store_dir = st.cache / f"proposer-teacher-{self.key(st)}"
        if (store_dir / "done").exists():
            with Store.open_readonly(store_dir) as store:
                return in_task_order(store.iter_trajectories(), prompts)  # the store holds them as they finished
        teacher = PROPOSER_STYLES[st.cfg.proposer_style].teacher(seed=st.cfg.seed, codec=codec)
        trajs = self.run_episodes(st, teacher, prompts, store_dir)
        (store_dir / "done").touch()
        return trajs

    def sft(self, st: Stages, model_path: Path, teacher: list) -> Path:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from workbench.train.sft import sft

        c = st.cfg
        path = st.cache / f"proposer-sft-{self.key(st, 'proposer_sft_epochs', 'sft_lr')}"
        losses_file = path / "sft_losses.json"
        if not (path / "config.json").exists():
            model = AutoModelForCausalLM.from_pretrained(model_path)
            tok = AutoTokenizer.from_pretrained(model_path)
            losses = sft(model, tok, teacher, epochs=c.proposer_sft_epochs, lr=c.sft_lr, seed=c.seed)
            model.save_pretrained(path)
            tok.save_pretrained(path)
            losses_file.write_text(json.dumps(losses))
        self.sft_losses = json.loads(losses_file.read_text())
        losses = self.sft_losses
        st.out(f"  {len(teacher)} proposer episodes, {len(losses)} SFT steps, loss {losses[0]:.3f} → {losses[-1]:.4f}")
        return path

    def evolve(self, st: Stages, solver: Solver) -> list[dict[str, Any]]:
        """Iterations of `cfg.mode`: Dr. Zero's (HRPO on the proposer, QA generation, GRPO on the solver) or Agent0's
        (GRPO on the proposer's curriculum reward, QA generation, ADPO on the solver)."""
        c = st.cfg
        config = evolve_config(
            st,
            "final_proposer",
            "iteration0",
            "coevolution_check",
            "check_live_adapters",
            hop_weights=c.proposer_hop_weights,
            proposer_group_size=c.proposer_hop_group,
            proposer_agent=proposer_agent(c),
        )
        policies = self.role_policies(solver)
        train_fn = self.train_fn(st, solver)
        checked = c.mode == "drzero" and c.check_prompts > 0
        kept = RoleWeights.keep(st, solver, self) if checked else None
        result = run_mode(
            st, config, proposer_policy=policies["proposer"], solver_policy=policies["solver"], train_fn=train_fn
        )
        try:
            rows = [self.iteration_row(st, solver, it, result.store) for it in result.iterations]
        finally:
            result.store.close()
        lines = proposer_lines(rows) if c.mode == "drzero" else mode_lines(st, rows) + proposer_update_lines(rows)
        for line in lines + (question_lines(rows) if solver.adapters is not None else []):
            st.out(line)
        if kept is not None:
            with st.timed("the proposer's first and last weights on the same prompts, against the first solver"):
                self.check = proposer_check(
                    st, solver, self, kept, config, prompts=c.check_prompts, samples=c.check_samples
                )
                for line in [*self.check.chain_lines(), f"  {self.check.line()}"]:
                    st.out(line)
        return rows

    def role_policies(self, solver: Solver) -> dict[str, Policy]:
        """What each role generates with in QA generation and solver attempts: its adapter's policy, or its model."""
        from workbench.policies import TransformersPolicy

        if solver.adapters is not None:
            return solver.policies
        return {
            "proposer": TransformersPolicy.from_model(self.model, self.tok, name="demo-proposer"),
            "solver": TransformersPolicy.from_model(solver.model, solver.tok, name="demo-solver"),
        }

    def train_fn(self, st: Stages, solver: Solver) -> TrainFn:
        """HRPO on the proposer's model, GRPO on the solver's; with adapters, each on its role's adapter (rollouts
        through its role's served adapter with vLLM), the HRPO rollouts also counting valid and answerable
        questions."""
        c, out, world = st.cfg, st.out, st.world
        per_hop = agent0_hop_stats if c.mode == "agent0" else hop_stats
        if solver.adapters is None:
            solver_fn = demo_train_fn(solver.model, solver.tok, c, on_step=out)
            return proposer_train_fn(self.model, self.tok, c, solver_fn, on_step=out, stats=per_hop)

        def stats(trajs: Any) -> dict[str, dict[str, float]]:
            shares = question_shares(trajs, world)
            return {hop: {**row, **shares[hop]} for hop, row in per_hop(trajs).items()}

        served = c.engine == "vllm"
        solver_policy = solver.policies["solver"] if served else None
        solver_fn = demo_train_fn(solver.model, solver.tok, c, on_step=out, policy=solver_policy)
        policy = solver.policies["proposer"] if served else None
        inner = proposer_train_fn(self.model, self.tok, c, solver_fn, on_step=out, stats=stats, policy=policy)
        return solver.adapters.train_fn(inner)

    def iteration_row(self, st: Stages, solver: Solver, it: IterationResult, store: Store) -> dict[str, Any]:
        """One iteration's figures for the report and summary.json (`store`: the run's trajectories); with
        adapters, also the valid and answerable shares of QA generation's questions."""
        row = {
            "iteration": it.iteration,
            "qa_size": it.qa_size,
            **it.metrics,
            "proposer_update": it.training.get("proposer", {}),
            "solver_update": it.training.get("solver", {}),
        }
        if solver.adapters is not None:
            row["questions"] = question_shares([store.get(i) for i in it.proposer_ids], st.world)
        return row

    def save_final(self, st: Stages, solver: Solver) -> None:
        if solver.adapters is None:  # the adapters are saved with the solver's
            self.model.save_pretrained(st.run / "final_proposer")
            self.tok.save_pretrained(st.run / "final_proposer")

    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]:
        first_last = [self.sft_losses[0], self.sft_losses[-1]]
        figures: dict[str, Any] = {"proposer": "learned"} | mode_report(st, evolution) | self.check_report(st)
        if st.cfg.mode == "drzero":  # Agent0's per iteration figures are in mode_report's
            figures["proposer_per_iteration"] = proposer_summary(evolution)
        if solver.adapters is None:
            return figures | {"proposer_sft_losses": first_last}
        solver_losses = [solver.sft_losses[0], solver.sft_losses[-1]]
        return figures | {
            "proposer_questions": question_summary(evolution),
            "sft_losses": {"solver": solver_losses, "proposer": first_last},
        }

    def check_report(self, st: Stages) -> dict[str, Any]:
        """The two co-evolution checks for summary.json (`workbench.demo.coevolution`), after the final evaluation."""
        if self.check is None:
            return {}
        held = heldout_change(st.run / "eval_sft", st.run / "eval_final", seed=st.cfg.seed)
        self.closing = [self.check.line(), held.line()]
        return {"coevolution": {"proposer_difficulty": asdict(self.check), "heldout": asdict(held)}}

    def closing_lines(self, st: Stages) -> list[str]:
        """The checks' lines, for scripts: the run's last two."""
        return list(self.closing)


__all__ = [
    "PROPOSER_TEACHER_ID",
    "LearnedProposer",
    "ScriptedProposer",
    "proposer_agent",
    "proposer_tokenizer_texts",
]
