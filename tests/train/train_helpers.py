"""Helpers shared by the training tests (imported by conftest.py and the tests themselves)."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.policies.base import ByteCodec, Completion, SamplingParams, truncate_at_stop

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
        return [
            Completion(text=text, token_ids=ids, logprobs=[-0.5] * len(ids), finish_reason="stop" if hit else "eos")
            for _ in prompts
        ]
