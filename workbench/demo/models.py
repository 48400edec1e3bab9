"""The solver's model, the demo's first variant: `TinyModel` (`make demo`) or `PretrainedModel` (`--model smollm2`).

    Stages(cfg, print, fresh=False, model=TinyModel(), proposer=ScriptedProposer())
    Stages(cfg, print, fresh=False, model=PretrainedModel(), proposer=LearnedProposer())

**TinyModel** builds its model: a tokenizer trained on the world and the teacher's format, a random tiny Qwen2
(1. model, 2. teacher, 3. SFT, 4. held-out accuracy, each accuracy per hop).

**PretrainedModel** starts from SmolLM2-135M-Instruct (the embedded GGUF, converted once by
`workbench.models.add_smollm2`), each episode in its chat template: 0. the model, 1. zero-shot accuracy with the
turns' format counts (`workbench.evaluate.turn_format`), 2. the teacher, 3. SFT (full fine-tuning: at 135M LoRA
learns less per minute here, `compare_sft`) and accuracy. One fixed held-out set at every stage; each accuracy has
a 95% Wilson interval, each change a paired bootstrap one (`workbench.evaluate.intervals`). With a learned
proposer each role trains a LoRA adapter on the frozen base (`workbench.train.lora.RoleAdapters`), generating
through one vLLM engine serving both (`workbench.policies.vllm_adapters`) or the model itself, with no KL term
(`rl_beta` 0: TRL 1.16 takes an adapter model's reference from an adapter named "default").
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from workbench.demo.config import DemoConfig, check_adapters
from workbench.demo.pipeline import DemoResult, Printer, ProposerKind, Solver, Stages
from workbench.demo.report import (
    StageEval,
    change_lines,
    change_rows,
    format_lines,
    hop_table,
    stage_rows,
    stages_table,
)
from workbench.demo.rl import ROLES, adapter_sft
from workbench.trajectory import Trajectory


class TinyModel:
    """`make demo`'s solver: a tokenizer trained on the world and a random tiny Qwen2, SFT, then GRPO."""

    name = "tiny"

    def check(self, cfg: DemoConfig, proposer: ProposerKind) -> None:
        """Every DemoConfig runs on the tiny model."""

    def solver_stages(self, st: Stages) -> Solver:
        """Stages 1-4: the tiny model, the teacher, SFT, held-out accuracy (`evals[0]`: rows per hop)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from workbench.policies import TokenizerCodec

        with st.timed("1. tiny model: tokenizer trained on the world + a random 2-layer Qwen2"):
            model0 = self.model0(st)
            tok = AutoTokenizer.from_pretrained(model0)
            st.out(f"  {model0}  vocab {len(tok)}")
        with st.timed("2. teacher: the code-style scripted agent on train questions (real kernels)"):
            teacher = st.teacher(TokenizerCodec(tok))
            st.out(f"  {len(teacher)} trajectories, {sum(t.termination == 'submitted' for t in teacher)} submitted")
        with st.timed("3. SFT on teacher turns (most multi-hop examples answer after one hop)"):
            sft_path = self.sft(st, model0, teacher)
            model = AutoModelForCausalLM.from_pretrained(sft_path)
        with st.timed("4. held-out accuracy of the SFT model (greedy)"):
            before = st.evaluate(model, tok, "eval_sft", cache_key=sft_path.name)
            st.out(hop_table(before))
        return Solver(model, tok, evals=[before])

    def model0(self, st: Stages) -> Path:
        """A tokenizer trained on the world and the teacher's format, and a random tiny Qwen2."""
        from workbench.demo.data import TEACHER_ID, tokenizer_texts
        from workbench.models.tiny import build_tiny_model
        from workbench.worlds.scripted.coder import world_coder

        c = st.cfg
        key = c.key("seed", "world_size", "vocab_size", "n_layer", "n_embd", "n_head")
        path = st.cache / f"model0-{TEACHER_ID}-v2-{key}"
        if not (path / "config.json").exists():
            # byte-level sampling: room for a whole cell, or the tokenizer never sees the teacher's code
            tasks = st.world.tasks("train")[:40]
            sample = st.run_agent(world_coder(), tasks, None, max_new_tokens=4096, max_context_tokens=16384)
            texts = tokenizer_texts(st.world, sample)
            build_tiny_model(
                path, texts, vocab_size=c.vocab_size, n_layer=c.n_layer, n_embd=c.n_embd, n_head=c.n_head, seed=c.seed
            )
        return path

    def sft(self, st: Stages, model_path: Path, teacher: list) -> Path:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from workbench.demo.data import sft_mix
        from workbench.policies import TokenizerCodec
        from workbench.train.sft import sft

        c = st.cfg
        names = ("seed", "world_size", "vocab_size", "n_layer", "n_embd", "n_head", "teacher_tasks", "give_up")
        path = st.cache / f"sft-{st.teacher_id}-{c.key(*names, 'sft_copies', 'sft_epochs', 'sft_lr')}"
        if not (path / "config.json").exists():
            model = AutoModelForCausalLM.from_pretrained(model_path)
            tok = AutoTokenizer.from_pretrained(model_path)
            data = sft_mix(teacher, TokenizerCodec(tok), give_up=c.give_up, copies=c.sft_copies, seed=c.seed)
            losses = sft(model, tok, data, epochs=c.sft_epochs, lr=c.sft_lr, seed=c.seed)
            st.out(f"  {len(data)} SFT sequences, {len(losses)} steps, loss {losses[0]:.3f} → {losses[-1]:.4f}")
            model.save_pretrained(path)
            tok.save_pretrained(path)
        return path

    def save_final(self, st: Stages, solver: Solver) -> None:
        if not st.proposer.learned:  # eval/run/serve-model run make demo's model as trained
            solver.model.config.workbench_agent = st.agent_config.model_settings()
        solver.model.save_pretrained(st.run / "final_model")
        solver.tok.save_pretrained(st.run / "final_model")

    def final_eval(self, st: Stages, solver: Solver) -> None:
        after = st.evaluate(solver.model, solver.tok, "eval_final")
        st.out(hop_table(after, solver.evals[0]))
        solver.evals.append(after)

    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]:
        return {"before": solver.evals[0], "after": solver.evals[-1]}

    def result(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> DemoResult:
        return DemoResult(st.run, solver.evals[0], solver.evals[-1], evolution, st.seconds)

    def closing_lines(self, st: Stages, result: DemoResult) -> list[str]:
        before, after = result.accuracy("before"), result.accuracy("after")
        lines = [
            f"\nheld-out accuracy {before:.1%} → {after:.1%} ({(after - before) * 100:+.1f} points) "
            f"in {sum(st.seconds.values()) / 60:.1f} min; run dir {st.run}"
        ]
        if not st.proposer.learned:
            lines.append(f"look at it: workbench show {st.run / 'eval_final'}   |   notebooks/00_teaching_demo.ipynb")
        return lines


class PretrainedModel:
    """`--model smollm2`'s solver: SmolLM2-135M-Instruct, zero-shot, after SFT and after RL; with a learned
    proposer, one frozen base with a LoRA adapter per role (see the module docstring)."""

    name = "pretrained"

    def __init__(self) -> None:
        self.changes: list[dict[str, Any]] = []

    def check(self, cfg: DemoConfig, proposer: ProposerKind) -> None:
        """With a learned proposer, the settings an adapter per role needs (`check_adapters`)."""
        if proposer.learned:
            check_adapters(cfg)

    def base_model(self) -> Path:
        from workbench.models import add_smollm2

        return add_smollm2()

    def solver_stages(self, st: Stages) -> Solver:
        if st.proposer.learned:
            return self.adapter_solver_stages(st)
        from workbench.models.load import load_causal_lm
        from workbench.policies import TokenizerCodec

        cfg = st.cfg
        with st.timed("0. the model: SmolLM2-135M-Instruct from the embedded GGUF"):
            base = self.base_model()
            model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
            st.out(f"  {base}  {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
        with st.timed(f"1. zero-shot held-out accuracy (greedy, its chat template, {cfg.zero_shot_steps} turns)"):
            zero = st.scored_eval(model, tok, "eval_zero_shot", cache_key="zero-shot", max_steps=cfg.zero_shot_steps)
            show(st.out, [zero])
            if cfg.engine == "vllm":  # the base weights' engine; the SFT model's serves evaluation and RL from here on
                from workbench.policies.vllm_colocated import release_engines

                release_engines()
        with st.timed("2. teacher: the code-style scripted agent, in the model's chat template (real kernels)"):
            teacher = st.teacher(TokenizerCodec(tok))
            st.out(f"  {len(teacher)} trajectories, {sum(t.termination == 'submitted' for t in teacher)} submitted")
        with st.timed("3. SFT on the teacher's turns, then held-out accuracy"):
            sft_path = self.sft_model(st, base, teacher)
            model, tok, _ = load_causal_lm(sft_path, device="cpu", dtype="float32")
            after_sft = st.scored_eval(model, tok, "eval_sft", cache_key=sft_path.name)
            show(st.out, [zero, after_sft])
        return Solver(model, tok, evals=[zero, after_sft])

    def sft_model(self, st: Stages, base: Path, teacher: list) -> Path:
        """SFT of the base model on the teacher's episodes (plus short-horizon twins, as `make demo`)."""
        from workbench.demo.data import sft_mix
        from workbench.models.load import load_causal_lm
        from workbench.policies import TokenizerCodec
        from workbench.train.sft import sft

        c = st.cfg
        key = c.key("seed", "world_size", "teacher_tasks", "give_up", "sft_copies", "sft_epochs", "sft_lr")
        path = st.cache / f"sft-{st.teacher_id}-{key}-b{c.sft_batch_size}-r{c.sft_lora_r}"
        if (path / "config.json").exists():
            return path
        model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
        if c.sft_lora_r:
            from workbench.train.config import TrainConfig
            from workbench.train.lora import wrap_lora

            model = wrap_lora(model, TrainConfig(lora_r=c.sft_lora_r, lora_alpha=2 * c.sft_lora_r))
        data = sft_mix(teacher, TokenizerCodec(tok), give_up=c.give_up, copies=c.sft_copies, seed=c.seed)
        losses = sft(
            model,
            tok,
            data,
            epochs=c.sft_epochs,
            lr=c.sft_lr,
            batch_size=c.sft_batch_size,
            seed=c.seed,
            agent_config=st.agent_config,
        )
        st.out(f"  {len(data)} SFT episodes, {len(losses)} steps, loss {losses[0]:.3f} → {losses[-1]:.4f}")
        if c.sft_lora_r:
            model = model.merge_and_unload()  # a plain model: GRPO and evaluation see no adapter
        model.save_pretrained(path)
        tok.save_pretrained(path)
        return path

    def adapter_solver_stages(self, st: Stages) -> Solver:
        """With a learned proposer: 0. the frozen base with an adapter per role, 1. the solver adapter's SFT on
        the teacher's episodes and its held-out accuracy."""
        from workbench.demo.data import sft_mix
        from workbench.policies import TokenizerCodec

        c = st.cfg
        with st.timed("0. the model: SmolLM2-135M-Instruct, frozen, with a LoRA adapter per role"):
            base = self.base_model()
            solver = self.build_adapters(st, base)
            st.out(f"  {base}  adapters {', '.join(ROLES)} (rank {c.sft_lora_r} on every linear layer)")
        assert solver.adapters is not None
        with st.timed("1. solver: the scripted teacher in the chat template, SFT of its adapter, held-out accuracy"):
            tok = solver.tok
            teacher = st.teacher(TokenizerCodec(tok))
            data = sft_mix(teacher, TokenizerCodec(tok), give_up=c.give_up, copies=c.sft_copies, seed=c.seed)
            key = c.key("seed", "world_size", "teacher_tasks", "give_up", "sft_copies")
            path, solver.sft_losses = adapter_sft(
                st, solver.adapters, "solver", tok, data, c.sft_epochs, f"{st.teacher_id}-{key}"
            )
            solver.evals.append(self.adapter_eval(st, solver, "eval_sft", cache_key=path.name))
            show(st.out, solver.evals)
        return solver

    def build_adapters(self, st: Stages, base: Path) -> Solver:
        """The base model, frozen, with a fresh adapter per role and each role's policy (its adapter, through
        vLLM or transformers)."""
        from workbench.models.load import load_causal_lm
        from workbench.train.lora import RoleAdapters

        c = st.cfg
        model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
        adapters = RoleAdapters(model, ROLES, rank=c.sft_lora_r, seed=c.seed)
        if c.engine == "vllm":
            from workbench.demo.pipeline import KV_CACHE_GIB
            from workbench.policies.vllm_adapters import AdapterVLLMPolicy, adapter_engine

            llm = adapter_engine(base, rank=c.sft_lora_r, roles=len(ROLES), seed=c.seed, kv_cache_gib=KV_CACHE_GIB)
            served = st.run / "served_adapters"
            policies: dict[str, Any] = {role: AdapterVLLMPolicy(llm, adapters, role, served) for role in ROLES}
        else:
            policies = {role: adapters.policy(role, tok) for role in ROLES}
        return Solver(adapters.model, tok, adapters=adapters, policies=policies)

    def adapter_eval(self, st: Stages, solver: Solver, name: str, cache_key: str | None = None) -> StageEval:
        """Greedy held-out evaluation of the solver's adapter (with `cache_key`, reused for the same weights)."""
        assert solver.adapters is not None
        solver.adapters.activate("solver")
        return st.scored_eval(solver.model, solver.tok, name, cache_key=cache_key, policy=solver.policies["solver"])

    def save_final(self, st: Stages, solver: Solver) -> None:
        if solver.adapters is not None:
            for role in ROLES:
                solver.adapters.save(role, st.run / "final_adapters")
            return
        solver.model.save_pretrained(st.run / "final_model")
        solver.tok.save_pretrained(st.run / "final_model")

    def final_eval(self, st: Stages, solver: Solver) -> None:
        if solver.adapters is not None:
            solver.evals.append(self.adapter_eval(st, solver, "eval_final"))
        else:
            solver.evals.append(st.scored_eval(solver.model, solver.tok, "eval_final"))
        show(st.out, solver.evals)

    def report(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> dict[str, Any]:
        """Prints each change with its interval; the stages' rows, format counts and changes for summary.json."""
        self.changes = change_rows(solver.evals, seed=st.cfg.seed)
        for line in change_lines(self.changes):
            st.out(line)
        stages: list[StageEval] = solver.evals
        return {
            "stages": {s.name: stage_rows(s) for s in stages},
            "format": {s.name: s.format for s in stages},
            "changes": self.changes,
        }

    def result(self, st: Stages, solver: Solver, evolution: list[dict[str, Any]]) -> DemoResult:
        before, after = solver.evals[-2], solver.evals[-1]
        return DemoResult(st.run, before.rows, after.rows, evolution, st.seconds, list(solver.evals), self.changes)

    def closing_lines(self, st: Stages, result: DemoResult) -> list[str]:
        minutes = sum(result.seconds.values()) / 60
        return [f"\n{minutes:.1f} min; run dir {st.run}; look: workbench show {st.run / 'eval_final'}"]


def show(out: Printer, stages: list[StageEval]) -> None:
    """The held-out table of `stages` so far, then the newest stage's format counts."""
    out(stages_table(stages))
    for line in format_lines(stages[-1]):
        out(line)


LORA_RANK = 16
LORA_LR_FACTOR = 10.0


def compare_sft(cfg: DemoConfig, *, fresh: bool = False, out: Printer = print) -> dict[str, Any]:
    """`--model smollm2 --compare-sft`: LoRA or full fine-tuning for the SFT, measured per minute of training.

    Both start from the same base model and train one pass over the same slice of the teacher's SFT data (the
    first `compare_rows` sequences, `--set extra='{"compare_rows": 32}'`) with the same batches; LoRA (rank 16 on
    every linear layer, at 10x the full learning rate, as LoRA is usually run) and full fine-tuning
    (`DemoConfig.sft_lr`). The figure is the drop of the loss on held-out teacher episodes (the last sixth of
    the teacher's, never trained on) per minute of training; both go to `<run_dir>/cache/sft_choice.json`."""
    from workbench.demo.data import sft_mix
    from workbench.demo.proposers import ScriptedProposer
    from workbench.models.load import load_causal_lm
    from workbench.policies import TokenizerCodec

    pretrained = PretrainedModel()
    st = Stages(cfg, out, fresh, pretrained, ScriptedProposer())
    base = pretrained.base_model()
    _, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
    teacher = st.teacher(TokenizerCodec(tok))
    held = max(2, len(teacher) // 6)
    rows = int(cfg.extra.get("compare_rows", 32))
    data = sft_mix(teacher[:-held], TokenizerCodec(tok), give_up=cfg.give_up, copies=cfg.sft_copies, seed=cfg.seed)
    data = data[:rows]
    results = {}
    for rank in (0, LORA_RANK):
        results["full" if rank == 0 else f"lora r{rank}"] = _train_once(base, data, teacher[-held:], cfg, rank)
    for name, r in results.items():
        out(
            f"  {name:>8}: {r['steps']} steps in {r['seconds']:.0f} s, held-out loss {r['loss_before']:.3f} → "
            f"{r['loss_after']:.3f}: {r['drop_per_minute']:.3f} per minute of training"
        )
    (st.cache / "sft_choice.json").write_text(json.dumps({"rows": len(data), **results}, indent=2))
    return results


def heldout_loss(model: Any, trajectories: list[Trajectory]) -> float:
    """Mean cross-entropy over the model tokens of `trajectories` (one sequence at a time, no grad)."""
    import torch

    from workbench.train.sft import sequences

    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for ids, mask in sequences(trajectories):
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0, :-1]
            targets = torch.tensor(ids[1:])
            keep = torch.tensor(mask[1:], dtype=torch.bool)
            losses = torch.nn.functional.cross_entropy(logits, targets, reduction="none")
            total += float(losses[keep].sum())
            count += int(keep.sum())
    return total / max(count, 1)


def _train_once(base: Any, data: list[Trajectory], held: list[Trajectory], cfg: DemoConfig, rank: int) -> dict:
    import torch

    from workbench.models.load import load_causal_lm
    from workbench.train.sft import sft

    torch.manual_seed(cfg.seed)
    model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
    lr = cfg.sft_lr
    if rank:
        from workbench.train.config import TrainConfig
        from workbench.train.lora import wrap_lora

        model, lr = wrap_lora(model, TrainConfig(lora_r=rank, lora_alpha=2 * rank)), lr * LORA_LR_FACTOR
    before = heldout_loss(model, held)
    t0 = time.perf_counter()
    losses = sft(model, tok, data, epochs=1, lr=lr, batch_size=cfg.sft_batch_size, seed=cfg.seed, progress=False)
    seconds = time.perf_counter() - t0
    after = heldout_loss(model, held)
    return {
        "lr": lr,
        "steps": len(losses),
        "seconds": seconds,
        "loss_before": before,
        "loss_after": after,
        "drop_per_minute": (before - after) / (seconds / 60),
    }


__all__ = ["PretrainedModel", "TinyModel", "compare_sft", "heldout_loss"]
