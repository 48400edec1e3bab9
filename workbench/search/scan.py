"""A lone query's exhaustive scan, split into row ranges that threads scan at once.

faiss parallelises a search over its queries, so one query scans every row on one core. For indexes
that keep one code per row (`flat`, `flat16`, other scalar-quantised codes) the rows split cleanly:
each thread scans a contiguous range (`IDSelectorRange`, which faiss checks per row without decoding
the rows outside it) with faiss on one OpenMP thread, and the per-range top lists are merged by score,
ties to the lower row. faiss releases the GIL while it scans, so Python threads give real parallelism.

    scanner = RangeScanner(index, parts=2)
    scores, ids = scanner.search(query_vectors, k)   # same as index.search(query_vectors, k)

Measured by bench/bench_search.py (100k passages, flat16, 2 cores): see the README's search figures.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any

import numpy as np

from workbench.search.encoder import available_cpus

SPLIT_MIN_ROWS = 20_000  # below this a scan takes well under a millisecond: handing it to threads costs more


def has_idle_cores(n: int) -> bool:
    """Whether `n` cores are about free for this caller: the last minute's load average, of which the
    caller's own thread is about one (a searching process keeps it near 1.5 on an idle machine), leaves
    `n - 1` other cores idle."""
    return os.getloadavg()[0] < available_cpus() - n + 2


def splits_by_rows(index: Any) -> bool:
    """Whether a lone query's scan of `index` is worth splitting: an inner-product index on this host
    that stores one fixed-size code per row (so a range of rows is a range of codes), and is large."""
    import faiss

    plain = faiss.downcast_index(index)
    return (
        isinstance(plain, faiss.IndexFlatCodes)
        and plain.metric_type == faiss.METRIC_INNER_PRODUCT
        and plain.ntotal >= SPLIT_MIN_ROWS
    )


def ranked(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's top `k` of (score, id) candidates: larger scores first, equal scores lower row first
    (faiss's heap leaves the order of equal scores to chance); empty slots as faiss fills them."""
    scores_out = np.full((len(scores), k), np.finfo(np.float32).min, np.float32)
    ids_out = np.full((len(scores), k), -1, np.int64)
    for r in range(len(scores)):
        keep = ids[r] >= 0
        row_scores, row_ids = scores[r][keep], ids[r][keep]
        best = np.lexsort((row_ids, -row_scores))[:k]
        scores_out[r, : len(best)], ids_out[r, : len(best)] = row_scores[best], row_ids[best]
    return scores_out, ids_out


class RangeScanner:
    """Searches `index` for a few queries by scanning `parts` row ranges in parallel threads."""

    def __init__(self, index: Any, parts: int):
        import faiss

        self.index = index
        bounds = np.linspace(0, index.ntotal, parts + 1).astype(np.int64).tolist()
        self._selectors = [faiss.IDSelectorRange(lo, hi) for lo, hi in pairwise(bounds) if hi > lo]
        self._params = []
        for selector in self._selectors:  # kept alive here: the parameters hold a bare pointer to it
            params = faiss.SearchParameters()
            params.sel = selector
            self._params.append(params)
        # the caller scans the first range itself: one thread hand-off fewer a search
        self._pool = ThreadPoolExecutor(max(len(self._params) - 1, 1), thread_name_prefix="scan-range")

    def _scan(self, q: np.ndarray, k: int, params: Any) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        faiss.omp_set_num_threads(1)  # this thread's own OpenMP setting: no spinning helpers
        scores, ids = self.index.search(q, k, params=params)
        return scores, ids

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top `k` (scores, ids) per row of `q`, larger scores first, equal scores lower row first."""
        first, *rest = self._params
        pending = [self._pool.submit(self._scan, q, k, params) for params in rest]
        parts = [self.index.search(q, k, params=first), *(f.result() for f in pending)]
        scores = np.concatenate([s for s, _ in parts], axis=1)
        ids = np.concatenate([i for _, i in parts], axis=1)
        return ranked(scores, ids, k)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
