"""LoRA through peft: the adapter a `TrainConfig` asks for, and adapter checkpoints.

    cfg = TrainConfig(model_path="runs/tiny", lora_r=8, lora_alpha=16)
    peft_config = lora_config(cfg)          # a peft.LoraConfig, or None when lora_r is 0
    WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg)   # wraps the model itself

TRL's GRPOTrainer wraps the model with `peft.get_peft_model`; only the adapter's `lora_A`/`lora_B`
tensors train, the base weights stay frozen. With a KL term (`beta > 0`) the reference log-probs
come from the same model with the adapter disabled, so no second copy of the weights is held.
Checkpoints and the final dir hold the adapter only (`adapter_config.json`,
`adapter_model.safetensors`), naming the base model they apply to.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from peft import LoraConfig

    from workbench.train.config import TrainConfig

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
ALL_LINEAR = "all-linear"  # peft's name for every linear layer but the output head


def lora_config(config: TrainConfig) -> LoraConfig | None:
    """The peft `LoraConfig` of a run, or None when `lora_r` is 0 (full fine-tuning)."""
    if config.lora_r == 0:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_target_modules) or ALL_LINEAR,
        task_type="CAUSAL_LM",
    )


def is_adapter_dir(path: str | Path) -> bool:
    """Whether `path` holds a saved peft adapter (what a LoRA run's checkpoints and final dir are)."""
    return (Path(path) / ADAPTER_FILES[0]).is_file()


__all__ = ["ADAPTER_FILES", "is_adapter_dir", "lora_config"]
