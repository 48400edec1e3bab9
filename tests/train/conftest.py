"""Fixtures for training tests: a tiny local Qwen2 + tokenizer, tasks, a keyword retriever,
and a scripted policy (canned turns over the byte codec)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from workbench.policies.base import ByteCodec, Completion, SamplingParams, truncate_at_stop  # noqa: E402
from workbench.trajectory import Task  # noqa: E402

DOCS = [
    {"title": "Paris", "text": "Paris is the capital of France."},
    {"title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"title": "Rome", "text": "Rome is the capital of Italy."},
    {"title": "Madrid", "text": "Madrid is the capital of Spain."},
]
TEXTS = [f"{d['title']}: {d['text']}" for d in DOCS] + [
    "<search> capital of France </search> <information> Doc 1(Title: Paris) </information>",
    "<answer> Paris </answer> <think> I should search. </think> Question: what is the capital?",
]


class KeywordRetriever:
    """Ranks the fixture documents by word overlap with the query."""

    def __init__(self, docs: Sequence[dict] = DOCS) -> None:
        self.docs = list(docs)
        self.queries: list[str] = []

    def search(self, query: str, top_k: int = 3) -> list[dict]:
        self.queries.append(query)
        words = set(query.lower().split())
        scored = sorted(self.docs, key=lambda d: -len(words & set(f"{d['title']} {d['text']}".lower().split())))
        return scored[:top_k]


class ScriptedPolicy:
    """Replies with the next canned turn per prompt (by call count), cut at the stop strings."""

    name = "scripted"

    def __init__(self, turns: Sequence[str]) -> None:
        self.codec = ByteCodec()
        self.turns = list(turns)
        self.calls = 0

    def describe(self) -> dict:
        return {"backend": "scripted"}

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        text = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        text, hit = truncate_at_stop(text, params.stop)
        ids = self.codec.encode(text)
        return [Completion(text=text, token_ids=ids, logprobs=[-0.5] * len(ids),
                           finish_reason="stop" if hit else "eos") for _ in prompts]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workbench.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", TEXTS * 4, vocab_size=320, n_layer=2,
                            n_embd=32, n_head=2, max_positions=512, seed=0)


@pytest.fixture()
def tiny(tiny_model_dir: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture()
def tasks() -> list[Task]:
    caps = [("France", "Paris", 1), ("Germany", "Berlin", 2), ("Italy", "Rome", 1), ("Spain", "Madrid", 3)]
    return [Task(id=f"t{i}", question=f"What is the capital of {c}?", golden_answers=[a], metadata={"hops": h})
            for i, (c, a, h) in enumerate(caps * 2)]


@pytest.fixture()
def retriever() -> KeywordRetriever:
    return KeywordRetriever()
