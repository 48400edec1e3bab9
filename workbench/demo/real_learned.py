"""`python -m workbench.demo --model smollm2 --proposer learned`: both roles learning on SmolLM2-135M-Instruct.

Dr. Zero's two roles as two LoRA adapters on one frozen SmolLM2-135M-Instruct (`workbench.demo.adapters`):
one base in memory (135M float32 weights), a "solver" adapter and a "proposer" adapter on every linear
layer (rank `sft_lora_r`). Whichever role trains, its adapter is active and the only trainable weight; each
role's policy switches to its own adapter for each generation batch and back. Stages:

0. the model: the converted GGUF (`--model smollm2`'s stage 0) and the two fresh adapters;
1. the solver: the scripted teacher's episodes in the chat template (`--model smollm2`'s stage 2), SFT of the
   solver's adapter on them, then held-out accuracy (greedy);
2. the proposer: the code-style proposer teacher's episodes (`--proposer learned`'s P1), token-exact in the
   same chat template, and SFT of the proposer's adapter on them;
3. self-evolution, as `--proposer learned` runs it: per iteration HRPO on the proposer's adapter (rollouts
   scored 0.5·format + difficulty against the solver adapter's attempts, hop groups), QA generation, GRPO on
   the solver's adapter;
4. held-out accuracy after RL, with the change and its paired 95% interval.

Per iteration and hop it prints the proposer's format score and difficulty (`workbench.demo.hrpo`) and how
many of its questions are valid and answerable (`workbench.demo.questions`), in the HRPO rollouts and in QA
generation; `summary.json` holds them. Training has no KL term (`rl_beta` 0): TRL 1.16 takes the reference of
a model that already carries adapters from one named "default", and the adapter-free base would pull each role
back to zero-shot SmolLM2; the adapters' low rank and small learning rates keep the steps small. Generation
(evaluation, rollouts of both trainers, QA generation, solver attempts) runs through one vLLM engine serving
both adapters on the base's weights (`engine="vllm"`, `workbench.demo.vllm_adapters`), or through the
transformers model itself (`engine="transformers"`, the `--fast` smoke run's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench.demo.adapters import RoleAdapters
from workbench.demo.config import SMOLLM2_LEARNED, DemoConfig
from workbench.demo.hrpo import hop_stats, proposer_train_fn
from workbench.demo.learned import LearnedStages, proposer_lines, proposer_summary
from workbench.demo.pipeline import Printer
from workbench.demo.questions import question_lines, question_shares, question_summary
from workbench.demo.real_model import RealModelResult, RealModelStages, finish, print_format
from workbench.demo.real_report import change_rows, stages_table
from workbench.errors import ConfigError
from workbench.policies.base import Policy

ROLES = ("solver", "proposer")


def check_config(cfg: DemoConfig) -> None:
    """The settings two adapters on one base need; each error names its fix."""
    if cfg.sft_lora_r <= 0:
        raise ConfigError("--model smollm2 --proposer learned trains one LoRA adapter per role: set sft_lora_r > 0")
    if cfg.rl_beta != 0:
        raise ConfigError(
            "--model smollm2 --proposer learned trains without a KL term (TRL 1.16 takes an adapter model's "
            "reference from an adapter named 'default'): set rl_beta=0"
        )


class RealLearnedStages(RealModelStages, LearnedStages):
    """`--model smollm2`'s stages with `--proposer learned`'s, on one base with an adapter per role."""

    adapters: RoleAdapters
    policies: dict[str, Policy]  # what each role generates with: its adapter, through vLLM or transformers

    def build_adapters(self, base: Path) -> Any:
        """The base model, frozen, with a fresh adapter per role (`self.adapters`) and each role's policy
        (`self.policies`); returns its tokenizer."""
        from workbench.models.load import load_causal_lm

        c = self.cfg
        model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
        self.adapters = RoleAdapters(model, ROLES, rank=c.sft_lora_r, seed=c.seed)
        if c.engine == "vllm":
            from workbench.demo.vllm_adapters import AdapterVLLMPolicy, adapter_engine

            llm = adapter_engine(base, rank=c.sft_lora_r, roles=len(ROLES), seed=c.seed)
            served = self.run / "served_adapters"
            self.policies = {role: AdapterVLLMPolicy(llm, self.adapters, role, served) for role in ROLES}
        else:
            self.policies = {role: self.adapters.policy(role, tok) for role in ROLES}
        return tok

    def adapter_sft(self, role: str, tok: Any, data: list, epochs: int, key: str) -> tuple[Path, list[float]]:
        """SFT of `role`'s adapter on `data`, cached under `cache/<role>-adapter-<key>`; its dir and losses."""
        from workbench.train.sft import sequences, sft

        c = self.cfg
        path = self.cache / f"{role}-adapter-{key}-{c.key('sft_lora_r', 'sft_lr', 'sft_batch_size')}-e{epochs}"
        losses_file = path / "sft_losses.json"
        if losses_file.exists():
            self.adapters.load(role, path)
        else:
            self.adapters.activate(role)
            model = self.adapters.model
            losses = sft(model, tok, data, epochs=epochs, lr=c.sft_lr, batch_size=c.sft_batch_size, seed=c.seed)
            self.adapters.save(role, path)
            losses_file.write_text(json.dumps(losses))
        losses = json.loads(losses_file.read_text())
        rows = len(sequences(data))  # an episode trimmed to fit its window is several sequences
        self.out(
            f"  {role}: {len(data)} episodes ({rows} sequences), {len(losses)} SFT steps, "
            f"loss {losses[0]:.3f} → {losses[-1]:.4f}"
        )
        return path, list(losses)

    def solver_sft(self, tok: Any, teacher: list) -> tuple[Path, list[float]]:
        """The solver adapter's SFT on the teacher's episodes plus short-horizon twins, as `make demo`'s."""
        from workbench.demo.data import sft_mix
        from workbench.policies import TokenizerCodec

        c = self.cfg
        data = sft_mix(teacher, TokenizerCodec(tok), give_up=c.give_up, copies=c.sft_copies, seed=c.seed)
        key = c.key("seed", "world_size", "teacher_tasks", "give_up", "sft_copies")
        return self.adapter_sft("solver", tok, data, c.sft_epochs, f"{self.teacher_id}-{key}")

    def proposer_adapter_sft(self, tok: Any, teacher: list) -> tuple[Path, list[float]]:
        """The proposer adapter's SFT on the proposer teacher's episodes, keyed by what those depend on."""
        return self.adapter_sft("proposer", tok, teacher, self.cfg.proposer_sft_epochs, self._proposer_key())

    def solver_eval(self, tok: Any, name: str, cache_key: str | None = None) -> Any:
        """Greedy held-out evaluation of the solver's adapter (with `cache_key`, reused for the same weights)."""
        self.adapters.activate("solver")
        return self.scored_eval(self.adapters.model, tok, name, cache_key=cache_key, policy=self.policies["solver"])

    def role_policies(self, solver: tuple[Any, Any], proposer: tuple[Any, Any]) -> dict[str, Policy]:
        return self.policies

    def both_train_fn(self, solver: tuple[Any, Any], proposer: tuple[Any, Any]) -> Any:
        """`--proposer learned`'s updates, each on its role's adapter; HRPO rollouts also keep how many
        questions are valid and answerable."""
        from workbench.demo.rl import demo_train_fn

        c, world = self.cfg, self.world

        def stats(trajs: Any) -> dict[str, dict[str, float]]:
            shares = question_shares(trajs, world)
            return {hop: {**row, **shares[hop]} for hop, row in hop_stats(trajs).items()}

        # with vLLM, each trainer's rollouts sample through its role's served adapter; else from the live model
        served = c.engine == "vllm"
        solver_fn = demo_train_fn(*solver, c, on_step=self.out, policy=self.policies["solver"] if served else None)
        proposer_policy = self.policies["proposer"] if served else None
        inner = proposer_train_fn(*proposer, c, solver_fn, on_step=self.out, stats=stats, policy=proposer_policy)
        return self.adapters.train_fn(inner)

    def iteration_row(self, it: Any, store: Any) -> dict[str, Any]:
        """`--proposer learned`'s row plus the valid and answerable shares of QA generation's questions."""
        trajs = [store.get(traj_id) for traj_id in it.proposer_ids]
        return {**super().iteration_row(it, store), "questions": question_shares(trajs, self.world)}


def run_real_learned_demo(
    cfg: DemoConfig | None = None, *, fresh: bool = False, out: Printer = print
) -> RealModelResult:
    """Run every stage; see the module docstring."""
    from workbench.policies import TokenizerCodec

    cfg = cfg or DemoConfig(**SMOLLM2_LEARNED)
    check_config(cfg)
    st = RealLearnedStages(cfg, out, fresh)
    out(f"workbench demo, both roles learning on SmolLM2-135M-Instruct: world seed {cfg.seed}, run dir {st.run}")
    with st.timed("0. the model: SmolLM2-135M-Instruct, frozen, with a LoRA adapter per role"):
        base = st.base_model()
        tok = st.build_adapters(base)
        out(f"  {base}  adapters {', '.join(ROLES)} (rank {cfg.sft_lora_r} on every linear layer)")
    with st.timed("1. solver: the scripted teacher in the chat template, SFT of its adapter, held-out accuracy"):
        teacher = st.teacher(TokenizerCodec(tok))
        solver_dir, solver_losses = st.solver_sft(tok, teacher)
        after_sft = st.solver_eval(tok, "eval_sft", cache_key=solver_dir.name)
        out(stages_table([after_sft]))
        print_format(out, after_sft)
    with st.timed("2. proposer: the code-style proposer teacher in the chat template, SFT of its adapter"):
        p_teacher = st.proposer_teacher(TokenizerCodec(tok))
        submitted = sum(t.termination == "submitted" for t in p_teacher)
        out(f"  {len(p_teacher)} proposer teacher episodes, {submitted} submitted")
        _, proposer_losses = st.proposer_adapter_sft(tok, p_teacher)
    with st.timed("3. self-evolution, both roles learning: HRPO on the proposer's adapter, GRPO on the solver's"):
        model = st.adapters.model
        evolution = st.evolve_both((model, tok), (model, tok))
        for line in proposer_lines(evolution) + question_lines(evolution):
            out(line)
        for role in ROLES:
            st.adapters.save(role, st.run / "final_adapters")
    with st.timed("4. held-out accuracy after RL (greedy)"):
        after_rl = st.solver_eval(tok, "eval_final")
        stages = [after_sft, after_rl]
        out(stages_table(stages))
        print_format(out, after_rl)
    result = finish(st, RealModelResult(st.run, stages, change_rows(stages, seed=cfg.seed), evolution, st.seconds), out)
    summary_file = st.run / "summary.json"
    summary = json.loads(summary_file.read_text())
    summary |= {
        "proposer": "learned",
        "proposer_per_iteration": proposer_summary(evolution),
        "proposer_questions": question_summary(evolution),
        "sft_losses": {
            "solver": [solver_losses[0], solver_losses[-1]],
            "proposer": [proposer_losses[0], proposer_losses[-1]],
        },
    }
    summary_file.write_text(json.dumps(summary, indent=2, default=str))
    return result


__all__ = ["ROLES", "RealLearnedStages", "check_config", "run_real_learned_demo"]
