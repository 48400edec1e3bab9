"""`DemoConfig`: every number of the CPU demo, in one place, with the defaults `make demo` uses."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field


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
    solver_attempts: int = 3
    rl_steps_per_iteration: int = 5
    rl_questions_per_step: int = 4
    rl_generations: int = 4
    rl_lr: float = 3e-4
    rl_temperature: float = 1.0
    rl_beta: float = 0.1  # KL to the SFT model (k3, in the loss): keeps "stop when nothing is left" intact
    rl_reward: str = "l0.qa"  # 0.9·EM + 0.1·has_answer: answering at all beats running out of steps
    rl_top_p: float = 0.95  # trims the sampling tail on the long constant code, keeps the decisions stochastic
    # evaluation and runtime
    eval_tasks: int = 150  # held-out questions, greedy
    concurrency: int = 16  # episodes at once: one batch for the policy, kernel start-up overlaps
    max_steps: int = 6
    torch_threads: int = 2
    extra: dict = field(default_factory=dict)

    def key(self, *names: str) -> str:
        """A short hash of the named fields: cache keys for what those fields determine."""
        values = {n: getattr(self, n) for n in names}
        return hashlib.sha1(json.dumps(values, sort_keys=True).encode()).hexdigest()[:10]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


FAST = dict(teacher_tasks=60, sft_epochs=2, iterations=1, proposer_prompts=4, solver_attempts=2,
            rl_steps_per_iteration=1, rl_questions_per_step=2, rl_generations=2, eval_tasks=12, concurrency=4)
"""Settings for a smoke run (tests): every stage runs, in about a minute; no learning is expected."""

__all__ = ["FAST", "DemoConfig"]
