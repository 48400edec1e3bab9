"""Fixtures for self-evolution tests: a small world and a BM25 retriever over its corpus."""

from __future__ import annotations

import pytest

from workbench.worlds import make_world


@pytest.fixture(scope="session")
def world():
    return make_world(seed=0, size="small")


@pytest.fixture(scope="session")
def retriever(world):
    from workbench.search import BM25Retriever, Corpus

    return BM25Retriever.build(Corpus.from_rows(world.corpus()), show_progress=False)
