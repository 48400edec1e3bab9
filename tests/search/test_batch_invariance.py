"""Same query, same answer: a query's vector and hits never depend on what else is searched with it.

Before the fix, the default int8 query graph quantised a whole padded batch with one activation scale:
16 held-out questions of the demo world searched as one batch and one at a time differed in their top 3
for 8 of them. Every backend now encodes each query on its own, so a row equals the query's lone vector
bit for bit (stronger than the 1e-6 cosine the issue asks for), and a flat index re-scores its
candidates query by query, so hits and scores are equal too.
"""

from __future__ import annotations

import json
import random
import threading
import urllib.request

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.search import Corpus, DenseRetriever, Encoder, serve_in_thread
from workbench.search.ortencoder import BACKENDS
from workbench.worlds import make_world


@pytest.fixture(scope="module")
def demo_world():
    """The demo's world (seed 0, "small": 300 passages) and its 200 held-out questions."""
    w = make_world(0, "small")
    return Corpus.from_rows(w.corpus()), [t.question for t in w.tasks("test")]


@pytest.fixture(scope="module")
def encoders(encoder) -> dict[str, Encoder]:
    assert encoder.query_backend == "onnx-int8"  # the default, shared with the other search tests
    return {b: encoder if b == "onnx-int8" else Encoder(query_backend=b) for b in BACKENDS}


@pytest.fixture(scope="module")
def retriever(dense, demo_world) -> DenseRetriever:
    """conftest's session-wide `dense`: the demo world's passages, default encoder, flat index."""
    assert [h["id"] for h in dense.corpus] == [r["id"] for r in demo_world[0]] and dense.spec == "flat"
    return dense


def lone_vectors(encoder: Encoder, queries: list[str]) -> np.ndarray:
    return np.concatenate([encoder.encode_queries([q]) for q in queries])


def top_ids(retriever: DenseRetriever, vectors: np.ndarray, k: int = 3) -> list[list[str]]:
    return [[h.id for h in hits] for hits in retriever.search_vectors(vectors, k)]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_held_out_set_alone_equals_one_shuffled_batch(backend, demo_world, encoders, retriever):
    """All 200 held-out questions, alone vs one shuffled batch: the same vectors bit for bit (so cosine 1,
    within any tolerance) and the same top-3 ids and scores."""
    encoder, questions = encoders[backend], demo_world[1]
    alone = lone_vectors(encoder, questions)
    order = list(range(len(questions)))
    random.Random(7).shuffle(order)
    batch = np.empty_like(alone)
    batch[order] = encoder.encode_queries([questions[i] for i in order])
    assert np.array_equal(batch, alone)
    assert top_ids(retriever, batch) == top_ids(retriever, alone)
    lone_hits = [retriever.search_vectors(alone[i : i + 1], 3)[0] for i in range(len(questions))]
    assert retriever.search_vectors(batch, 3) == lone_hits  # ids, scores, text: all equal


POOL = 24  # held-out questions the property draws from (their lone vectors are computed once)


@pytest.fixture(scope="module")
def pool(demo_world, encoders) -> tuple[list[str], dict[str, np.ndarray]]:
    questions = demo_world[1][:POOL]
    return questions, {b: lone_vectors(e, questions) for b, e in encoders.items()}


@pytest.mark.slow
@given(
    backend=st.sampled_from(BACKENDS),
    picks=st.lists(st.integers(0, POOL - 1), min_size=1, max_size=12),
    workers=st.integers(1, 4),
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_batch_composition_and_order_gives_each_query_its_lone_vector(backend, picks, workers, pool, encoders):
    """Random batches (repeats allowed, any order, any number of concurrent runs): row i is the lone
    vector of question picks[i]."""
    questions, lone = pool
    encoder = encoders[backend]
    default, encoder.query_workers = encoder.query_workers, workers
    try:
        got = encoder.encode_queries([questions[i] for i in picks])
    finally:
        encoder.query_workers = default
    assert np.array_equal(got, lone[backend][picks])


@given(picks=st.lists(st.integers(0, POOL - 1), min_size=1, max_size=40))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_flat_search_hits_do_not_depend_on_batch_mates(picks, pool, retriever):
    """Faiss ranks a batch through BLAS and a lone query without it; the re-scoring makes them agree
    exactly, also across the batch size where faiss switches."""
    lone = pool[1]["onnx-int8"]
    expected = [retriever.search_vectors(lone[i : i + 1], 5)[0] for i in picks]
    assert retriever.search_vectors(lone[picks], 5) == expected


def _post(url: str, queries: list[str]) -> list:
    body = json.dumps({"queries": queries, "topk": 3, "return_scores": True}).encode()
    req = urllib.request.Request(f"{url}/retrieve", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())["result"]


def test_serve_search_concurrent_single_queries_equal_the_batch_answer(demo_world, retriever):
    """16 clients each sending one question at the same moment get exactly what one batch request gets."""
    questions = demo_world[1][:16]
    with serve_in_thread(retriever, topk=3) as url:
        batch = _post(url, questions)
        singles: list = [None] * len(questions)
        start = threading.Barrier(len(questions))

        def client(i: int) -> None:
            start.wait()
            singles[i] = _post(url, [questions[i]])[0]

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(questions))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert singles == batch
