"""Supervised fine-tuning on stored trajectories, token-exact: the warm start before RL.

    from workbench.train.sft import sft
    losses = sft(model, tokenizer, store.iter_trajectories(role="solver"), epochs=3, lr=3e-3)

Each trajectory segment (`Trajectory.segments()`) is one training sequence: the prompt and the
observation tokens are context (attended to, never trained on: `env_mask` 0), the model's own
turns are the targets. No re-tokenization: the ids are the ones the trajectory recorded, so a
scripted teacher run with the model's codec gives exactly the sequences the model will produce.
Batches are length-bucketed to waste little on padding. With `agent_config` (the settings the
trajectories were run with), the model records them, so every save of it carries them.
Only trainable weights are optimized, so a LoRA model trains its adapter alone:

    model = wrap_lora(model, TrainConfig(lora_r=8))     # workbench.train.lora
    sft(model, tokenizer, trajectories); model.save_pretrained("runs/sft-adapter")   # the adapter only
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from workbench.errors import TrainingError
from workbench.trajectory import Trajectory


def sequences(trajectories: Iterable[Trajectory]) -> list[tuple[list[int], list[int]]]:
    """(input ids, loss mask) per segment: mask 1 on the model's tokens, 0 on prompt/observations."""
    out = []
    for traj in trajectories:
        for seg in traj.segments():
            ids = seg["prompt_ids"] + seg["completion_ids"]
            mask = [0] * len(seg["prompt_ids"]) + seg["env_mask"]
            if any(mask):
                out.append((ids, mask))
    return out


def _batches(seqs: list[tuple[list[int], list[int]]], batch_size: int, rng: random.Random) -> list[list[int]]:
    order = list(range(len(seqs)))
    rng.shuffle(order)
    order.sort(key=lambda i: len(seqs[i][0]))  # stable: equal lengths stay shuffled
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def sft(
    model: Any,
    tokenizer: Any,
    trajectories: Iterable[Trajectory],
    *,
    epochs: int = 3,
    lr: float = 3e-3,
    batch_size: int = 8,
    warmup: float = 0.1,
    max_grad_norm: float = 1.0,
    seed: int = 0,
    progress: bool = True,
    agent_config: Any = None,
) -> list[float]:
    """Train `model` in place on the model tokens of `trajectories`; returns the loss per step.
    `agent_config` (an `AgentConfig`): the agent settings to record on the model (see the module
    docstring)."""
    import torch
    from tqdm.auto import tqdm

    if agent_config is not None:
        from workbench.agent.config import stamp_model

        stamp_model(model, agent_config)
    seqs = sequences(trajectories)
    if not seqs:
        raise TrainingError("sft got no trajectory with model tokens; run some episodes first")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rng = random.Random(seed)
    torch.manual_seed(seed)
    steps = epochs * -(-len(seqs) // batch_size)
    trained = [p for p in model.parameters() if p.requires_grad]  # a LoRA model: its adapter
    opt = torch.optim.AdamW(trained, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=warmup)
    model.train()
    losses: list[float] = []
    bar = tqdm(total=steps, desc="sft", unit="step", disable=not progress, leave=False)
    for _ in range(epochs):
        for batch in _batches(seqs, batch_size, rng):
            width = max(len(seqs[i][0]) for i in batch)
            ids = torch.full((len(batch), width), pad)
            labels = torch.full((len(batch), width), -100)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                x, m = seqs[i]
                ids[row, : len(x)] = torch.tensor(x)
                attention[row, : len(x)] = 1
                labels[row, : len(x)] = torch.tensor([t if keep else -100 for t, keep in zip(x, m, strict=True)])
            loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
    bar.close()
    model.eval()
    return losses


__all__ = ["sequences", "sft"]
