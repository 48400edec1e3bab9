"""Load a causal LM and its tokenizer from any model spec, on the device and in the precision asked.

    model, tokenizer, source = load_causal_lm("Qwen/Qwen2.5-0.5B-Instruct", device="auto")
    model, tokenizer, source = load_causal_lm("smollm2", device="cpu", dtype="float32")

`device="auto"` is a CUDA GPU when one is visible, else the CPU; `dtype="auto"` is bfloat16 on a GPU
that supports it, else float32 (the CPU always computes in float32 unless asked otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.models.resolve import ModelSource, resolve_model

DEVICES = ("auto", "cpu", "cuda")


def pick_device(device: str = "auto") -> str:
    """ "cuda" or "cpu" for "auto"; a CUDA device only when one is visible (else a ConfigError)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={device!r} but no CUDA GPU is visible: use device='cpu' or 'auto'")
    if device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    return device


def pick_dtype(dtype: Any, device: str) -> Any:  # a torch.dtype
    """The torch dtype for `dtype` ("auto", a name such as "bfloat16", or a torch dtype) on `device`."""
    import torch

    if dtype in (None, "auto"):
        if device.startswith("cuda") and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if isinstance(dtype, str):
        found = getattr(torch, dtype, None)
        if not isinstance(found, torch.dtype):
            raise ConfigError(f"unknown dtype {dtype!r}: use 'auto', 'float32', 'bfloat16' or 'float16'")
        return found
    return dtype


def load_tokenizer(source: ModelSource) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source.directory, **source.pretrained_kwargs())


def load_causal_lm(
    spec: str | Path | ModelSource, *, device: str | None = "auto", dtype: Any = "auto"
) -> tuple[Any, Any, ModelSource]:
    """(model, tokenizer, source) for `spec` (see `resolve_model`). The model is in eval mode on
    `device`; `device=None` leaves it where transformers loads it (the CPU: a trainer moves it)."""
    from transformers import AutoModelForCausalLM

    source = spec if isinstance(spec, ModelSource) else resolve_model(spec)
    dev = pick_device(device) if device is not None else "cpu"
    tokenizer = load_tokenizer(source)
    model: Any = AutoModelForCausalLM.from_pretrained(
        source.directory, dtype=pick_dtype(dtype, dev), **source.pretrained_kwargs()
    )
    if device is not None:
        model.to(dev)
    model.eval()
    return model, tokenizer, source


__all__ = ["DEVICES", "load_causal_lm", "load_tokenizer", "pick_device", "pick_dtype"]
