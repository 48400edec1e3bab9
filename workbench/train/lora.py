"""LoRA through peft: the adapter a `TrainConfig` asks for, and adapter checkpoints.

    cfg = TrainConfig(model_path="runs/tiny", lora_r=8, lora_alpha=16)
    peft_config = lora_config(cfg)          # a peft.LoraConfig, or None when lora_r is 0
    WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg)   # wraps the model itself

TRL's GRPOTrainer wraps the model with `peft.get_peft_model`; only the adapter's `lora_A`/`lora_B`
tensors train, the base weights stay frozen. With a KL term (`beta > 0`) the reference log-probs
come from the same model with the adapter disabled, so no second copy of the weights is held.
Checkpoints and the final dir hold the adapter only (`adapter_config.json`,
`adapter_model.safetensors`), naming the base model they apply to; `merge_adapter` (the CLI's
`workbench models merge ADAPTER --out DIR`) folds one into its base as a plain model directory.
An adapter dir holds no `config.json`, so the agent settings the run trained under (the model's
`workbench_agent`, e.g. the compact prompt) go beside it in `workbench_agent.json`, and the merged
model carries them again: `eval --policy transformers:MERGED` runs it as trained.

    merge_adapter("runs/train/final", "runs/merged")     # base from the adapter's config, or base=SPEC
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from peft import LoraConfig, PeftModel

    from workbench.train.config import TrainConfig

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
AGENT_SETTINGS_FILE = "workbench_agent.json"  # beside an adapter: the agent settings its run trained under
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


def wrap_lora(model: Any, config: TrainConfig) -> PeftModel:
    """`model` with the run's LoRA adapter added (peft's `get_peft_model`): only the adapter trains.
    For loops outside TRL, such as `workbench.train.sft.sft`; GRPO wraps the model itself."""
    peft_config = lora_config(config)
    if peft_config is None:
        raise ConfigError("wrap_lora needs a LoRA run: set TrainConfig.lora_r > 0")
    from peft import get_peft_model

    return get_peft_model(model, peft_config)


def is_adapter_dir(path: str | Path) -> bool:
    """Whether `path` holds a saved peft adapter (what a LoRA run's checkpoints and final dir are)."""
    return (Path(path) / ADAPTER_FILES[0]).is_file()


def adapter_base(adapter_dir: str | Path) -> str:
    """The base model spec an adapter was trained on (its `base_model_name_or_path`)."""
    if not is_adapter_dir(adapter_dir):
        raise ConfigError(
            f"{adapter_dir} holds no peft adapter ({ADAPTER_FILES[0]} missing); give a LoRA run's "
            "checkpoint-N or final directory"
        )
    base = json.loads((Path(adapter_dir) / ADAPTER_FILES[0]).read_text()).get("base_model_name_or_path")
    if not base:
        raise ConfigError(f"{adapter_dir}'s adapter names no base model; pass the base model spec (base=/--base)")
    return str(base)


def save_adapter_settings(model: Any, adapter_dir: str | Path) -> None:
    """Write the agent settings stamped on `model` (its config's `workbench_agent`) beside the adapter
    saved in `adapter_dir`; nothing when the model carries none or the dir holds no adapter."""
    from workbench.policies.base import model_agent_settings

    settings = model_agent_settings(model)
    if settings and is_adapter_dir(adapter_dir):
        (Path(adapter_dir) / AGENT_SETTINGS_FILE).write_text(json.dumps(settings, indent=2, sort_keys=True))


def merge_adapter(adapter_dir: str | Path, out_dir: str | Path, base: str | None = None) -> Path:
    """Fold the LoRA adapter in `adapter_dir` into its base model (`base`, else the one the adapter
    names) and save the result, with the base's tokenizer, as a plain model directory `out_dir`."""
    from peft import PeftModel

    from workbench.models.load import load_causal_lm

    spec = base or adapter_base(adapter_dir)
    model, tokenizer, _ = load_causal_lm(spec, device=None, dtype="float32")
    merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    settings = Path(adapter_dir) / AGENT_SETTINGS_FILE
    if settings.is_file():  # the settings the adapter was trained under win over the base's
        from workbench.policies.base import AGENT_SETTINGS_KEY

        setattr(merged.config, AGENT_SETTINGS_KEY, json.loads(settings.read_text()))
    out = Path(out_dir)
    merged.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


__all__ = [
    "ADAPTER_FILES",
    "AGENT_SETTINGS_FILE",
    "adapter_base",
    "is_adapter_dir",
    "lora_config",
    "merge_adapter",
    "save_adapter_settings",
    "wrap_lora",
]
