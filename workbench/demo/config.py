"""`DemoConfig`: every number of the CPU demo, in one place, with the defaults `make demo` uses."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class DemoConfig:
    run_dir: str = "runs/demo"
    seed: int = 0
    world_size: str = "small"  # 300 passages, 1000 train / 200 held-out questions
    # tiny model
    vocab_size: int = 1000
    n_layer: int = 2
    n_embd: int = 128
    n_head: int = 4
    # teacher + SFT
    teacher_tasks: int = 200
    give_up: float = 0.8  # share of short-horizon twins among multi-hop SFT examples
    sft_copies: int = 3
    sft_epochs: int = 3
    sft_lr: float = 3e-3
    # self-evolution / RL
    iterations: int = 2
    proposer_prompts: int = 16
    # The demo trades Dr. Zero's values (5 proposer samples per prompt, n = 5 attempts, solver group 5)
    # for CPU time: one proposer sample per prompt, 3 attempts, GRPO groups of `rl_generations`.
    proposer_samples: int = 1
    solver_attempts: int = 3
    rl_steps_per_iteration: int = 5
    rl_questions_per_step: int = 4
    rl_generations: int = 4
    rl_lr: float = 3e-4
    rl_temperature: float = 1.0
    rl_beta: float = 0.1  # KL to the SFT model (k3, in the loss): keeps "stop when nothing is left" intact
    rl_reward: str = "l0.qa"  # 0.9·EM + 0.1·has_answer: answering at all beats running out of steps
    rl_top_p: float = 0.95  # trims the sampling tail on the long constant code, keeps the decisions stochastic
    # learned proposer (`--proposer learned`): its own tokenizer and tiny Qwen2 (the solver's layers and
    # width), SFT on the scripted proposer's episodes, HRPO in each iteration
    proposer_teacher_tasks: int = 200
    proposer_hop_weights: dict = field(default_factory=lambda: {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0})  # Dr. Zero
    proposer_vocab_size: int = 1000
    proposer_context_tokens: int = 2048
    proposer_max_new_tokens: int = 512  # room for the teacher's first cell (its patterns and helpers, ~470 tokens)
    proposer_sft_epochs: int = 5  # 155 steps: the constant first cell and the choice of an option
    proposer_rl_steps: int = 2  # HRPO steps per iteration
    proposer_rl_batch: int = 8  # proposer rollouts per HRPO step (one per prompt) ...
    proposer_hop_group: int = 2  # ... in hop groups of this many same-hop prompts
    proposer_rl_lr: float = 3e-4
    # evaluation and runtime
    eval_tasks: int = 150  # held-out questions, greedy
    concurrency: int = 16  # episodes at once: one batch for the policy, kernel start-up overlaps
    max_steps: int = 6
    torch_threads: int = 2
    engine: str = "transformers"  # generation (RL, solver attempts, evaluation): transformers | vllm
    extra: dict = field(default_factory=dict)

    def key(self, *names: str) -> str:
        """A short hash of the named fields: cache keys for what those fields determine."""
        values = {n: getattr(self, n) for n in names}
        return hashlib.sha1(json.dumps(values, sort_keys=True).encode()).hexdigest()[:10]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


FAST: dict[str, Any] = dict(
    teacher_tasks=60,
    sft_epochs=2,
    iterations=1,
    proposer_prompts=4,
    solver_attempts=2,
    rl_steps_per_iteration=1,
    rl_questions_per_step=2,
    rl_generations=2,
    eval_tasks=12,
    concurrency=4,
)
"""Settings for a smoke run (tests): every stage runs, in about a minute; no learning is expected."""

FAST_LEARNED: dict[str, Any] = dict(
    FAST,
    proposer_teacher_tasks=16,
    proposer_hop_weights={1: 1.0, 2: 1.0},
    proposer_sft_epochs=1,
    proposer_rl_steps=1,
    proposer_rl_batch=2,
    proposer_hop_group=2,
    eval_tasks=4,
)
"""A smoke run of `--proposer learned`: 4 prompts over two hop counts always hold one hop group of 2;
the solver's held-out evaluations shrink to 4 questions (the stages this run checks are the proposer's)."""

__all__ = ["FAST", "FAST_LEARNED", "DemoConfig"]
