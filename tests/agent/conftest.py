"""Shared fixtures for agent tests: a small world with a BM25 search tool."""

from __future__ import annotations

import pytest

from workbench.resolve import search_registry
from workbench.worlds import make_world


@pytest.fixture(scope="session")
def world():
    return make_world(seed=0, size="small")


@pytest.fixture(scope="session")
def world_tools(world):
    from workbench.search import BM25Retriever, Corpus

    return search_registry(BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False))


@pytest.fixture(scope="session")
def pick(world):
    """pick(hops, n): the first n held-out tasks with that many hops."""

    def _pick(hops: int, n: int, split: str = "test"):
        return [t for t in world.tasks(split) if t.metadata["hops"] == hops][:n]

    return _pick


@pytest.fixture(scope="session")
def tiny_model_dir(world, tmp_path_factory):
    """A randomly initialised tiny Qwen2 whose tokenizer was trained on the world's passages."""
    from workbench.models.tiny import build_tiny_model, sample_texts
    from workbench.worlds import split_title

    texts = [split_title(p["contents"])[1] for p in world.corpus()] + sample_texts(50)
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), texts, vocab_size=600)
