"""LoRA or full fine-tuning for the SmolLM2 demo's SFT: measured per minute of training on a slice.

    python -m workbench.demo --model smollm2 --compare-sft [--set extra='{"compare_rows": 32}']

Both start from the same base model and train one pass over the same slice of the teacher's SFT data
(the first `compare_rows` sequences, 32 by default) with the same batches; LoRA (rank 16 on every
linear layer, at 10x the full learning rate, as LoRA is usually run) and full fine-tuning
(`DemoConfig.sft_lr`). The figure is the drop of the loss on held-out teacher episodes (the last
sixth of the teacher's, never trained on) per minute of training. Both results go to
`<run_dir>/cache/sft_choice.json`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from workbench.demo.config import DemoConfig
from workbench.demo.pipeline import Printer
from workbench.trajectory import Trajectory

LORA_RANK = 16
LORA_LR_FACTOR = 10.0


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


def compare_sft(cfg: DemoConfig, *, fresh: bool = False, out: Printer = print) -> dict[str, Any]:
    """Train full and LoRA on one slice; print and return the held-out loss drop per minute of each."""
    from workbench.demo.data import sft_mix
    from workbench.demo.real_model import RealModelStages
    from workbench.models.load import load_causal_lm
    from workbench.policies import TokenizerCodec

    st = RealModelStages(cfg, out, fresh)
    base = st.base_model()
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


__all__ = ["compare_sft", "heldout_loss"]
