"""A lone query's scan split over row ranges finds what one whole scan finds.

The split applies to indexes that store one code per row (`flat`, `flat16`/`SQfp16`, `SQ8`); each thread
scans a contiguous range and the ranges' top lists are merged by score, ties to the lower row.
"""

from __future__ import annotations

import faiss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.search import Corpus, DenseRetriever, dense, scan
from workbench.search.dense import build_faiss_index
from workbench.search.scan import RangeScanner, ranked, splits_by_rows


def unit_rows(n: int, d: int = 32, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    return unit_rows(3000)


@pytest.mark.parametrize("kind", ["flat", "flat16", "SQ8"])
@pytest.mark.parametrize("parts", [2, 3, 7])
def test_split_scan_equals_one_scan(rows, kind, parts):
    index = build_faiss_index(rows, kind)
    queries = unit_rows(25, seed=1)
    scores, ids = index.search(queries, 13)
    scanner = RangeScanner(index, parts)
    try:
        split_scores, split_ids = scanner.search(queries, 13)
    finally:
        scanner.close()
    assert (split_ids == ids).all()
    np.testing.assert_array_equal(split_scores, scores)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 60), parts=st.integers(2, 5), ties=st.booleans())
def test_any_size_k_and_ties(n, k, parts, ties):
    """Fewer rows than k or than parts, and rows with equal scores: the scores of one whole scan, and its
    rows ranked larger score first, equal scores lower row first (faiss's heap orders ties by chance)."""
    vectors = unit_rows(n, d=8, seed=n)
    if ties:
        vectors[n // 2 :] = vectors[0]
    index = build_faiss_index(vectors, "flat")
    query = vectors[:1]
    scanner = RangeScanner(index, parts)
    try:
        split_scores, split_ids = scanner.search(query, k)
    finally:
        scanner.close()
    scores, ids = index.search(query, n)  # every row: no tie is cut at the k-th place
    whole_scores, whole_ids = ranked(scores, ids, k)
    assert split_ids.tolist() == whole_ids.tolist()
    np.testing.assert_array_equal(split_scores, whole_scores)
    assert sorted(split_scores[0][: min(n, k)].tolist(), reverse=True) == split_scores[0][: min(n, k)].tolist()


def test_ranked_orders_ties_by_row_and_keeps_empty_slots():
    """Hand-made candidates: scores 0.5, 0.9, 0.5, and an empty slot (-1). Ranked: 0.9 (row 7), then the
    two 0.5s by row (2 before 4); k = 4 leaves one empty slot, filled as faiss fills it."""
    scores = np.array([[0.5, 0.9, 0.5, -1.0]], np.float32)
    ids = np.array([[4, 7, 2, -1]])
    top_scores, top_ids = ranked(scores, ids, 4)
    assert top_ids.tolist() == [[7, 2, 4, -1]]
    assert top_scores.tolist() == [[np.float32(0.9), 0.5, 0.5, np.finfo(np.float32).min]]


def test_only_large_inner_product_code_indexes_split(rows, monkeypatch):
    assert not splits_by_rows(build_faiss_index(rows, "flat"))  # 3,000 rows: below SPLIT_MIN_ROWS
    monkeypatch.setattr(scan, "SPLIT_MIN_ROWS", 1000)
    assert splits_by_rows(build_faiss_index(rows, "flat16"))
    assert not splits_by_rows(build_faiss_index(rows, "hnsw"))  # a graph: rows do not split by range
    l2 = faiss.IndexFlatL2(rows.shape[1])
    l2.add(rows)
    assert not splits_by_rows(l2)  # smaller is better there: the merge ranks inner products


@pytest.mark.parametrize("kind", ["flat", "flat16"])
def test_retriever_hits_do_not_depend_on_the_split(rows, kind, monkeypatch):
    """The retriever with its scan split in two, and with one whole scan, gives the same hits to lone
    queries and to a small batch (the flat index re-scores its candidates either way)."""
    monkeypatch.setattr(scan, "SPLIT_MIN_ROWS", 1000)
    monkeypatch.setattr(dense, "has_idle_cores", lambda n: True)  # split even on a busy machine
    corpus = Corpus.from_rows([{"id": str(i), "contents": f"t{i}\np{i}"} for i in range(len(rows))])
    split = DenseRetriever.from_vectors(corpus, rows, index=kind)
    whole = DenseRetriever(corpus, None, split.cpu_index, spec=kind, gpu=False, search_threads=1)
    assert split._scanner is not None and whole._scanner is None
    calls = []
    monkeypatch.setattr(split._scanner, "search", lambda *a, real=split._scanner.search: calls.append(1) or real(*a))
    queries = unit_rows(5, seed=3)
    for q in (queries[:1], queries):
        assert [[(h.id, h.score) for h in hits] for hits in split.search_vectors(q, 10)] == [
            [(h.id, h.score) for h in hits] for hits in whole.search_vectors(q, 10)
        ]
    assert len(calls) == 2  # both searches went through the split scan


def test_a_busy_machine_scans_whole(monkeypatch):
    """The load average counts the caller's own thread: on 2 cores a load of 1.7 (one searching process
    on an idle machine) leaves a core free for a 2-way split, 2.4 does not."""
    monkeypatch.setattr(scan, "available_cpus", lambda: 2)
    monkeypatch.setattr(scan.os, "getloadavg", lambda: (1.7, 0.0, 0.0))
    assert scan.has_idle_cores(2)
    monkeypatch.setattr(scan.os, "getloadavg", lambda: (2.4, 0.0, 0.0))
    assert not scan.has_idle_cores(2)
