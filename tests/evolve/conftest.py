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


@pytest.fixture(scope="session")
def counting_store():
    """A real `Store` class that also counts the writes of each trajectory id (`.writes`)."""
    from workbench.store import Store

    class CountingStore(Store):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.writes: dict[str, int] = {}

        def write_many(self, trajs):
            trajs = list(trajs)
            for t in trajs:
                self.writes[t.id] = self.writes.get(t.id, 0) + 1
            return super().write_many(trajs)

    return CountingStore
