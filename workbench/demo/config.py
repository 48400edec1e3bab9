"""`DemoConfig`: every number of the CPU demo, in one place, with the defaults `make demo` uses; and its presets.

    DemoConfig.preset("fast")                        # a smoke run of make demo's stages (tests)
    DemoConfig.preset("smollm2", run_dir="runs/x")   # a preset, then changes
    preset_name("pretrained", "learned", fast=True)  # "fast_smollm2_learned": the preset of a variant

Each preset is a checked `DemoConfig` in `PRESETS` (tests/demo/test_presets.py builds and checks every one).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import warnings
from dataclasses import dataclass
from typing import Any, Literal

from workbench.configfile import Config, config_field
from workbench.errors import ConfigError


@dataclass
class DemoConfig(Config):
    """The demo's settings; each field's help is shown by `DemoConfig.fields_help()`."""

    config_table = "demo"

    run_dir: str = config_field("runs/demo", "Where the demo's stages write (models, stores, caches, the report).")
    seed: int = config_field(0, "Seed of the world, the teacher, training and sampling.")
    world_size: str = config_field(
        "small",
        "Synthetic world size: tiny | small (300 passages, 1000 train / 200 held-out questions) | medium | large.",
    )
    # tiny model
    vocab_size: int = config_field(1000, "Vocabulary of the tiny model's tokenizer, trained on the world.")
    n_layer: int = config_field(2, "Transformer layers of the tiny model.")
    n_embd: int = config_field(128, "Hidden width of the tiny model.")
    n_head: int = config_field(4, "Attention heads of the tiny model.")
    # teacher + SFT
    teacher_tasks: int = config_field(200, "Training questions the scripted teacher solves for the SFT data.")
    give_up: float = config_field(0.8, "Share of short-horizon twins among multi-hop SFT examples.")
    compact_teacher: bool = config_field(
        False,
        "The teacher writes its hop cell once, as hop() in its plan cell, then calls it each turn "
        "(workbench.worlds.scripted.coder): the same decisions in a third fewer tokens (--model smollm2).",
    )
    sft_copies: int = config_field(3, "Copies of each teacher episode in the SFT data.")
    sft_epochs: int = config_field(3, "SFT epochs over the teacher's episodes.")
    sft_lr: float = config_field(3e-3, "SFT learning rate.")
    sft_batch_size: int = config_field(8, "SFT sequences per optimizer step.")
    sft_lora_r: int = config_field(
        0, "LoRA rank of the SFT (0: full fine-tuning); a LoRA adapter is merged into the weights after it."
    )
    # self-evolution / RL
    mode: Literal["drzero", "agent0"] = config_field(
        "drzero",
        "Self-evolution: drzero (difficulty reward; the solver's GRPO on the proposer's answers) | agent0 (curriculum "
        "reward: self-consistency, tool use, repetition; the executor's ADPO on majority-vote labels, p in the band).",
    )
    agent0_p_low: float = config_field(0.3, "--mode agent0: keep questions with self-consistency p >= this (0.3).")
    agent0_p_high: float = config_field(0.8, "--mode agent0: ... and p <= this (Agent0 README: 0.8).")
    agent0_reward: Literal["paper", "code"] = config_field("paper", "--mode agent0: preset agent0_paper | agent0.")
    iterations: int = config_field(2, "Self-evolution iterations (propose questions, then train the solver).")
    proposer_prompts: int = config_field(16, "Proposer prompts (document + hop count) per iteration.")
    # The demo trades Dr. Zero's values (5 proposer samples per prompt, n = 5 attempts, solver group 5)
    # for CPU time: one proposer sample per prompt, 3 attempts, GRPO groups of `rl_generations`.
    proposer_samples: int = config_field(1, "Proposer episodes per prompt (Dr. Zero: 5; 1 for CPU time).")
    solver_attempts: int = config_field(3, "Solver attempts per proposed question (Dr. Zero: n = 5; 3 for CPU time).")
    rl_steps_per_iteration: int = config_field(5, "Solver GRPO steps per iteration.")
    rl_questions_per_step: int = config_field(4, "Questions per solver GRPO step.")
    rl_generations: int = config_field(4, "Rollouts per question: the solver's GRPO group size.")
    rl_concurrency: int = config_field(4, "Rollouts of a GRPO step run at once (TrainConfig.concurrency).")
    rl_micro_batch: int = config_field(
        0,
        "Rows per GRPO micro-batch, a multiple of rl_generations dividing a step's rows (0: the whole step at once); "
        "gradients accumulate over a step's micro-batches.",
    )
    rl_lr: float = config_field(3e-4, "Solver RL learning rate.")
    rl_temperature: float = config_field(1.0, "Sampling temperature of the solver's RL rollouts.")
    rl_beta: float = config_field(
        0.1, "KL coefficient to the SFT model (k3, in the loss): keeps 'stop when nothing is left' intact."
    )
    rl_reward: str = config_field(
        "l0.qa", "Solver reward spec (l0.qa: 0.9·EM + 0.1·has_answer; answering at all beats running out of steps)."
    )
    rl_gradient_checkpointing: bool = config_field(
        False,
        "Recompute activations in the GRPO and HRPO backward: a SmolLM2 micro-batch of 4 rows x 1100 tokens peaked at "
        "2.2 GB instead of 7.6 GB, its step 1.2x as long.",
    )
    rl_lora_r: int = config_field(
        0,
        "LoRA rank of the solver's GRPO (0: full fine-tuning); alpha 2r, every linear layer. Each iteration's "
        "adapter is merged into the weights after its steps, so the next stage samples from them.",
    )
    rl_token_budget: int = config_field(
        0,
        "Generated tokens an RL episode may use in all (solver attempts and GRPO rollouts; 0: no cap): bounds "
        "a sampled runaway, which sets the step's time (it decodes alone at the end) and TRL's padded row length.",
    )
    rl_top_p: float = config_field(
        0.95, "Top-p of the RL rollouts: trims the sampling tail on the long constant code, keeps decisions stochastic."
    )
    # learned proposer (`--proposer learned`): its own tokenizer and tiny Qwen2 (the solver's layers and
    # width), SFT on the scripted proposer's episodes, HRPO in each iteration
    proposer_teacher_tasks: int = config_field(
        200, "--proposer learned: scripted proposer episodes its SFT learns from."
    )
    proposer_hop_weights: dict[int, float] = config_field(
        {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0}, "The proposer's hop-count sampling weights (Dr. Zero: 4:3:2:1)."
    )
    proposer_style: Literal["code", "hop"] = config_field(
        "code",
        "--proposer learned: how its episodes are written (workbench.demo.proposer_styles): code (a constant first "
        "cell defines hop(i), then one hop(i) a turn; the prompt's n fixes the hop count) | hop (the kernel defines "
        "hop(i) and ask() before the first turn; one-line turns; it chooses how many hops, up to n).",
    )
    proposer_vocab_size: int = config_field(1000, "--proposer learned: vocabulary of its own tokenizer.")
    proposer_context_tokens: int = config_field(2048, "--proposer learned: its context window, tokens.")
    proposer_max_new_tokens: int = config_field(
        512, "--proposer learned: tokens per turn (room for the teacher's first cell, ~470 tokens)."
    )
    proposer_sft_epochs: int = config_field(
        5, "--proposer learned: SFT epochs (155 steps: the constant first cell and the choice of an option)."
    )
    proposer_rl_steps: int = config_field(2, "--proposer learned: HRPO steps per iteration.")
    proposer_rl_batch: int = config_field(8, "--proposer learned: rollouts per HRPO step (one per prompt) ...")
    proposer_hop_group: int = config_field(2, "... in hop groups of this many same-hop prompts.")
    proposer_rl_micro_batch: int = config_field(
        0,
        "--proposer learned: rows per HRPO micro-batch, a multiple of proposer_hop_group dividing proposer_rl_batch "
        "(0: the whole step at once); gradients accumulate over a step's micro-batches.",
    )
    proposer_rl_lr: float = config_field(3e-4, "--proposer learned: HRPO learning rate.")
    check_prompts: int = config_field(16, "--proposer learned: prompts of the first-vs-last proposer check (0: none).")
    check_samples: int = config_field(1, "--proposer learned: proposer samples per check prompt.")
    # evaluation and runtime
    eval_tasks: int = config_field(150, "Held-out questions of each evaluation (greedy).")
    concurrency: int = config_field(16, "Episodes at once: one batch for the policy; kernel start-up overlaps.")
    max_steps: int = config_field(6, "Agent turns per episode.")
    max_new_tokens: int = config_field(400, "Tokens per model turn (the teacher's first cell must fit).")
    keep_notepads: bool = config_field(
        False,
        "AgentConfig.keep_notepads: each observation's notepad block stays in the context, so an episode trains as "
        "one GRPO row instead of one per turn (a SmolLM2 step: 16 rows instead of 44).",
    )
    zero_shot_steps: int = config_field(
        2,
        "--model smollm2: agent turns of a zero-shot episode (a turn that runs out of tokens without code does "
        "not end an episode, so a model that rambles would use every turn's full budget).",
    )
    torch_threads: int = config_field(2, "torch.set_num_threads for training and generation.")
    engine: Literal["transformers", "vllm"] = config_field(
        "transformers", "Generation (RL, solver attempts, evaluation): transformers | vllm."
    )
    extra: dict[str, Any] = config_field({}, "Free-form settings for experiments, kept with the config.")

    def __post_init__(self) -> None:
        super().__post_init__()
        low, high = self.agent0_p_low, self.agent0_p_high
        if not 0.0 <= low <= high <= 1.0:
            raise ConfigError(f"DemoConfig.agent0_p_low, agent0_p_high: {low}, {high}; need 0 <= low <= high <= 1")

    def key(self, *names: str) -> str:
        """A short hash of the named fields: cache keys for what those fields determine."""
        values = {n: getattr(self, n) for n in names}
        return hashlib.sha1(json.dumps(values, sort_keys=True).encode()).hexdigest()[:10]

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> DemoConfig:
        """A copy of the preset `name` (`PRESETS`), then `overrides`; an unknown name is a ConfigError naming them."""
        if name not in PRESETS:
            raise ConfigError(f"no demo preset {name!r}; the presets are {', '.join(PRESETS)}")
        return cls.from_dict(PRESETS[name].to_dict(), **overrides)


MODES = ("drzero", "agent0")
PRESETS: dict[str, DemoConfig] = {"default": DemoConfig()}
"""Every preset by name, each a checked `DemoConfig`; `DemoConfig.preset(name)` gives a copy."""


def _preset(base: str, **changes: Any) -> DemoConfig:
    return DemoConfig.from_dict({**PRESETS[base].to_dict(), **changes})


def _fields(name: str, *fields: str) -> dict[str, Any]:
    return {f: getattr(PRESETS[name], f) for f in fields}


def preset_name(model: str, proposer: str, fast: bool = False, mode: str = "drzero") -> str:
    """The preset of a variant: the solver's model ("tiny" or "pretrained"), the proposer ("scripted" or
    "learned"), full-size or a smoke run, the mode ("drzero" or "agent0"): ("tiny", "scripted") is "default",
    ("pretrained", "learned", fast) "fast_smollm2_learned", ("tiny", "scripted", fast, "agent0") "fast_agent0"."""
    if (model, proposer, mode) not in itertools.product(("tiny", "pretrained"), ("scripted", "learned"), MODES):
        raise ConfigError(
            f"no demo variant ({model!r}, {proposer!r}, mode {mode!r}): the model is tiny or pretrained, "
            "the proposer scripted or learned, the mode drzero or agent0"
        )
    parts = ["fast"] * fast + ["smollm2"] * (model == "pretrained") + ["learned"] * (proposer == "learned")
    return "_".join(parts + ["agent0"] * (mode == "agent0")) or "default"


PRESETS["fast"] = _preset(
    "default",
    teacher_tasks=60,
    sft_copies=1,
    sft_epochs=1,
    iterations=1,
    proposer_prompts=4,
    solver_attempts=2,
    rl_steps_per_iteration=1,
    rl_questions_per_step=2,
    rl_generations=2,
    eval_tasks=12,
    concurrency=12,
    max_new_tokens=192,
)
"""Settings for a smoke run (tests): every stage runs, in a few minutes; no learning is expected. One SFT
pass over one copy of each teacher episode; model turns of at most 192 tokens (the teacher's first cell,
188 of the tiny tokenizer's tokens, still fits; the untrained model's turns run to the limit)."""

PRESETS["learned"] = _preset("default", run_dir="runs/demo_learned")
"""`--proposer learned`: `make demo`'s sizes, into runs/demo_learned."""

PRESETS["fast_learned"] = _preset(
    "fast",
    run_dir="runs/demo_learned",
    proposer_teacher_tasks=16,
    proposer_hop_weights={1: 1.0, 2: 1.0},
    proposer_sft_epochs=1,
    proposer_rl_steps=1,
    proposer_rl_batch=2,
    proposer_hop_group=2,
    eval_tasks=4,
    check_prompts=2,
)
"""A smoke run of `--proposer learned`: 4 prompts over two hop counts always hold one hop group of 2;
the solver's held-out evaluations shrink to 4 questions (the stages this run checks are the proposer's)."""

PRESETS["smollm2"] = _preset(
    "default",
    run_dir="runs/demo_smollm2",
    compact_teacher=True,
    eval_tasks=60,
    teacher_tasks=32,
    sft_copies=1,
    sft_epochs=2,
    sft_lr=2e-4,
    sft_batch_size=4,
    iterations=2,
    proposer_prompts=8,
    solver_attempts=2,
    rl_steps_per_iteration=2,
    rl_questions_per_step=4,
    rl_generations=4,
    rl_micro_batch=4,
    rl_concurrency=16,
    rl_lr=5e-4,
    rl_lora_r=16,
    rl_beta=0.0,
    rl_token_budget=640,
    proposer_hop_weights={2: 3.0, 3: 2.0, 4: 1.0},
    keep_notepads=True,
    concurrency=60,
    max_new_tokens=448,
    engine="vllm",
)
"""`--model smollm2`: SmolLM2-135M-Instruct instead of the tiny model, sized for an hour on 2 CPU cores.
The teacher is the compact one (`compact_teacher`): its plan cell, 392 of SmolLM2's tokens, defines
`hop()`, and each later turn is `hop()` (20 tokens), so turns are up to 448 tokens. SFT is two passes
over 32 teacher episodes, one sequence each with kept notepads (16 steps of 4; one pass, 8 steps, left the
plan cell half learnt: it overran its 448 tokens in 12 of the first 26 held-out episodes; 4 rows a step, as
8 rows' logits over SmolLM2's 49k-token vocabulary took 11 GB), at a learning rate for pretrained
weights. Self-evolution runs 2 iterations of 2 GRPO steps (4 questions x 4 rollouts) on a LoRA adapter
(rank 16, learning rate 5e-4, merged after each iteration; no KL term, so no reference pass), in
micro-batches of 4 rows (one question's group). Notepad blocks stay in the context (`keep_notepads`), so each
episode is one training row: with the newest block alone at the tail, a 5-turn episode was 4 rows, each
carrying the whole context again (44 rows of up to 1546 padded tokens in a step instead of 16). The
proposer asks 2-, 3- and 4-hop questions (3:2:1): after SFT the solver answers every one-hop question, so a
one-hop group's rollouts agree and carry no advantage. An RL episode ends after 640 generated tokens (a 4-hop teacher
episode generates 492): a sampled runaway would otherwise decode alone for minutes at the end of a step
and set the padded length of every row. 60 held-out questions at every stage, all 60 at once. vLLM's CPU
build generates
(`engine="vllm"`): on an idle 2-core machine the evaluation after SFT took 4.5 min for the 60 episodes
against 17.4 min through transformers (24 at once), with the same answers. `--engine transformers`
generates with the live model instead."""

PRESETS["fast_smollm2"] = _preset(
    "smollm2",
    sft_epochs=1,
    teacher_tasks=2,
    iterations=1,
    proposer_prompts=2,
    solver_attempts=2,
    rl_steps_per_iteration=1,
    rl_questions_per_step=1,
    rl_generations=2,
    rl_micro_batch=2,
    eval_tasks=2,
    concurrency=4,
    max_steps=2,
    max_new_tokens=64,
    engine="transformers",
)
"""A smoke run of `--model smollm2` (tests), generating through transformers (no vLLM engine to start): 2 held-out
questions, 2 teacher episodes (one SFT step on 2 rows of ~285 tokens), 2 proposed questions, one GRPO step on one
question's 2 rollouts; turns of at most 64 tokens, 2 per episode (the teacher's first cell, 392 of SmolLM2's
tokens, is cut: no learning is expected at this size, and a model turn of 280 prose tokens made the run 3x as
long). Each row of SFT or GRPO costs seconds of CPU here, so the smoke run keeps one step's worth of each."""

PRESETS["smollm2_learned"] = _preset(
    "smollm2",
    run_dir="runs/demo_smollm2_learned",
    engine="transformers",  # vLLM's CPU build served the two adapters at 0.38x (bench/bench_adapters.py)
    proposer_hop_weights={2: 3.0, 3: 2.0, 4: 1.0},  # the band gate's hop mix: one-hop questions never reach the band
    solver_attempts=5,  # Dr. Zero's n, the band gate's: at n = 2 a question is in the band only at k = 1
    rl_lora_r=0,  # each role trains its own adapter (workbench.train.lora.RoleAdapters)
    concurrency=24,
    sft_lora_r=16,
    sft_lr=2e-3,
    rl_lr=1e-4,
    rl_beta=0.0,
    proposer_teacher_tasks=32,
    proposer_sft_epochs=2,
    proposer_style="hop",  # one-line turns; the code style's 573-token first cell broke when sampled at temperature 1
    proposer_context_tokens=3072,
    proposer_max_new_tokens=64,
    proposer_rl_lr=1e-4,
    proposer_rl_batch=4,  # 8 prompts drawn 4:3:2:1 over hops rarely hold 8 in hop groups of 2 (a run had 7)
    proposer_rl_micro_batch=2,  # 4 rows of ~3000 tokens in one HRPO forward took past 23.8 GB (killed)
    rl_gradient_checkpointing=True,  # and a row's activations are recomputed in the backward
    rl_questions_per_step=2,  # QA generation gave 3 valid questions of 8 (a run): a step of 4 never ran
)
"""`--model smollm2 --proposer learned`: `--model smollm2`'s sizes, each role a LoRA adapter (rank 16) on one
frozen SmolLM2, generating through transformers (`--engine vllm` serves both adapters from one vLLM engine,
`workbench.policies.vllm_adapters`, which on this CPU ran at 0.38x: vLLM's CPU LoRA path is slow on long prompts;
bench/bench_adapters.py). LoRA takes 10x the full fine-tuning learning rates (SFT 2e-3, GRPO and HRPO 1e-4); no
KL term (see `workbench.demo.models`); the proposer is the hop style (`workbench.demo.proposer_styles`: the kernel
defines `hop(i)` and `ask()`, each turn is one line of up to 64 tokens, and it chooses how many hops to take, up to
the prompt's n) and learns from 32 teacher episodes, two passes, in a 3072-token window; an HRPO step takes 4 of
the iteration's 8 prompts, in whole hop groups of 2. (The code style's first cell, 573 of SmolLM2's tokens, came
out broken in each of a run's first 4 HRPO rollouts, sampled at temperature 1.) Prompts allow 2, 3 or 4 hops
(3:2:1) and the solver attempts each question 5 times (Dr. Zero's n): the Day-1 band gate (`bench/bench_coevolution.py
--band`) found 88% of such questions in the band for the SFT'd solver, where a first run with Dr. Zero's 4:3:2:1
and n = 2 earned no difficulty reward at all (one-hop questions: always answered)."""

PRESETS["fast_smollm2_learned"] = _preset(
    "smollm2_learned",
    **_fields("fast_smollm2", "iterations", "solver_attempts", "rl_steps_per_iteration", "eval_tasks"),
    **_fields("fast_smollm2", "concurrency", "max_steps", "max_new_tokens"),
    teacher_tasks=2,
    proposer_prompts=2,
    rl_questions_per_step=1,
    rl_generations=2,
    rl_micro_batch=2,
    proposer_teacher_tasks=2,
    proposer_hop_weights={1: 1.0},
    proposer_sft_epochs=1,
    proposer_max_new_tokens=64,
    proposer_rl_steps=1,
    proposer_rl_batch=2,
    proposer_hop_group=2,
    check_prompts=1,
)
"""A smoke run of `--model smollm2 --proposer learned` (tests): `--model smollm2 --fast`'s turns (2 of 64
tokens) and 2 held-out questions, 2 teacher episodes per role, one HRPO step on 2 one-hop prompts, a GRPO step on one
question's 2 rollouts when QA generation yields a valid question."""


# --mode agent0 over each preset ("agent0", "fast_agent0", ...). Agent0 (App. A.1): 10 executor attempts a question,
# groups of 16 (executor) and 4 (curriculum); here 4 attempts (3 fast), rl_generations, proposer_hop_group.
for _name, _base in list(PRESETS.items()):
    _agent0: dict[str, Any] = {"mode": "agent0", "run_dir": _base.run_dir + "_agent0", "rl_reward": "agent0_executor"}
    _agent0["solver_attempts"] = 3 if "fast" in _name else 4
    PRESETS[f"{_name}_agent0".removeprefix("default_")] = _preset(_name, **_agent0)


def check_adapters(cfg: DemoConfig) -> None:
    """The settings two adapters on one base need (`--model smollm2 --proposer learned`); each error names its fix."""
    if cfg.sft_lora_r <= 0:
        raise ConfigError("--model smollm2 --proposer learned trains one LoRA adapter per role: set sft_lora_r > 0")
    if cfg.rl_beta != 0:
        raise ConfigError(
            "--model smollm2 --proposer learned trains without a KL term (TRL 1.16 takes an adapter model's "
            "reference from an adapter named 'default'): set rl_beta=0"
        )


# The presets' old names, dicts of the fields they changed (a DeprecationWarning): DemoConfig.preset(name).
_RENAMED = {
    "FAST": "fast",
    "FAST_LEARNED": "fast_learned",
    "SMOLLM2": "smollm2",
    "FAST_SMOLLM2": "fast_smollm2",
    "SMOLLM2_LEARNED": "smollm2_learned",
    "FAST_SMOLLM2_LEARNED": "fast_smollm2_learned",
}


def __getattr__(name: str) -> Any:
    if name not in _RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = _RENAMED[name]
    warnings.warn(f"workbench.demo.config.{name} is now DemoConfig.preset({new!r})", DeprecationWarning, stacklevel=2)
    default, preset = PRESETS["default"].to_dict(), PRESETS[new].to_dict()
    changed = {k: v for k, v in preset.items() if v != default[k]}
    if new.startswith("fast_smollm2"):
        changed.setdefault("engine", preset["engine"])
    if new == "fast_learned":
        changed.pop("run_dir")  # the old dict had none: runs/demo_learned came from the command line
    return changed


__all__ = ["MODES", "PRESETS", "DemoConfig", "check_adapters", "preset_name"]
