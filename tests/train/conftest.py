"""Fixtures for training tests: a tiny local Qwen2 + tokenizer, tasks, a keyword retriever,
and a scripted policy (canned turns over the byte codec)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from train_helpers import DOCS, TEXTS, KeywordRetriever, ScriptedPolicy  # noqa: F401

from workbench.trajectory import Task


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workbench.models.tiny import build_tiny_model

    return build_tiny_model(
        tmp_path_factory.mktemp("tiny") / "model",
        TEXTS * 4,
        vocab_size=320,
        n_layer=2,
        n_embd=32,
        n_head=2,
        max_positions=512,
        seed=0,
    )


@pytest.fixture()
def tiny(tiny_model_dir: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture()
def tasks() -> list[Task]:
    caps = [("France", "Paris", 1), ("Germany", "Berlin", 2), ("Italy", "Rome", 1), ("Spain", "Madrid", 3)]
    return [
        Task(id=f"t{i}", question=f"What is the capital of {c}?", golden_answers=[a], metadata={"hops": h})
        for i, (c, a, h) in enumerate(caps * 2)
    ]


@pytest.fixture()
def retriever() -> KeywordRetriever:
    return KeywordRetriever()
