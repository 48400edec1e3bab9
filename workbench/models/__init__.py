"""Locally built models (no hub downloads)."""

from workbench.models.tiny import AGENT_TAGS, build_tiny_model, build_tokenizer, sample_texts

__all__ = ["AGENT_TAGS", "build_tiny_model", "build_tokenizer", "sample_texts"]
