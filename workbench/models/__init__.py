"""Models: resolved by name (hub id, local directory, GGUF file, a converted embedded model), loaded
on the right device, and tiny ones built locally (no hub downloads)."""

from workbench.models.load import load_causal_lm, pick_device, pick_dtype
from workbench.models.resolve import ModelSource, installed_models, models_dir, resolve_model
from workbench.models.smollm2 import add_smollm2
from workbench.models.tiny import AGENT_TAGS, build_tiny_model, build_tokenizer, sample_texts

__all__ = [
    "AGENT_TAGS",
    "ModelSource",
    "add_smollm2",
    "build_tiny_model",
    "build_tokenizer",
    "installed_models",
    "load_causal_lm",
    "models_dir",
    "pick_device",
    "pick_dtype",
    "resolve_model",
    "sample_texts",
]
