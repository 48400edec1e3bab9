"""The one-step training config the environment tests train through `workbench train --env`."""

from __future__ import annotations

import json
from pathlib import Path


def one_step_train_config(tmp_path: Path, texts: list[str]) -> Path:
    """A `[train]` TOML for one GRPO step of 2 episodes on a tiny model whose tokenizer learned `texts`."""
    from workbench.models.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny", texts, vocab_size=300, n_layer=2, n_embd=32, n_head=2, seed=0)
    settings = {
        "model_path": model,
        "output_dir": tmp_path / "out",
        "store_path": tmp_path / "store",
        "num_generations": 2,
        "per_device_train_batch_size": 4,
        "max_steps": 1,
        "max_turns": 2,
        "max_turn_tokens": 8,
        "max_completion_length": 64,
        "learning_rate": 1e-3,
    }
    config = tmp_path / "train.toml"
    config.write_text(
        "[train]\n"
        + "".join(f"{k} = {json.dumps(str(v) if isinstance(v, Path) else v)}\n" for k, v in settings.items())
    )
    return config


__all__ = ["one_step_train_config"]
