"""Encoded passages on disk: numbered `.npy` shards read as one memory-mapped row space, and the
exact re-ranking of a compressed index's candidates against them.

    vecs = ShardVectors.open("runs/wiki-idx/shards")     # nothing read yet
    vecs.rows(np.array([3, 17, 20_001]))                  # three float32 rows, read on demand
    rerank = Rerank(vecs, candidates=100)
    scores, ids = rerank.search(index, queries, k=10)     # index's top 100, re-ranked by exact score

A compressed index (IVF-PQ, HNSW over 8-bit codes) keeps its codes in memory and ranks by
approximate scores; re-ranking its top `candidates` by exact inner products with the full vectors
recovers most of what quantisation lost. The full vectors stay on disk, memory-mapped: a query
reads `candidates` rows (~1.5 KB each at 384-d) and the page cache keeps what is hot.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import numpy as np

from workbench.errors import RetrievalError


def shard_path(shards: Path, i: int) -> Path:
    return shards / f"{i:06d}.npy"


def save_atomic(path: Path, vectors: np.ndarray) -> None:
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, path)


class ShardVectors:
    """The encoded shards `0..n_shards-1` of `shards/` as one read-only (memory-mapped) row space."""

    def __init__(self, shards: Path, n_shards: int):
        self.dir = Path(shards)
        self.parts = [np.load(shard_path(self.dir, i), mmap_mode="r") for i in range(n_shards)]
        self.starts = np.cumsum([0] + [len(p) for p in self.parts])
        self.n = int(self.starts[-1])
        self.d = int(self.parts[0].shape[1])

    @classmethod
    def open(cls, shards: str | Path, count: int | None = None) -> ShardVectors:
        """Every consecutive shard from 000000.npy; `count` checks the total number of rows."""
        d = Path(shards)
        n = 0
        while shard_path(d, n).is_file():
            n += 1
        if n == 0:
            raise RetrievalError(
                f"{d} holds no encoded shards (000000.npy, ...); rebuild the index with `workbench index build`"
            )
        vecs = cls(d, n)
        if count is not None and vecs.n != count:
            raise RetrievalError(f"{d} holds {vecs.n} vectors but the index has {count}; rebuild with --fresh")
        return vecs

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """The float32 vectors at global row ids (any order; read shard by shard)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((len(ids), self.d), np.float32)
        where = np.searchsorted(self.starts, ids, side="right") - 1
        for s in np.unique(where):
            mask = where == s
            local = ids[mask] - self.starts[s]
            order = np.argsort(local)  # ascending offsets: sequential reads of the mapped file
            picked = np.empty((len(local), self.d), np.float32)
            picked[order] = self.parts[s][local[order]]
            out[mask] = picked
        return out


def exact_top(vecs: ShardVectors, queries: np.ndarray, k: int) -> np.ndarray:
    """Exact inner-product top-k row ids over all shards (streamed, shard by shard)."""
    best_s = np.full((len(queries), 0), -np.inf, np.float32)
    best_i = np.zeros((len(queries), 0), np.int64)
    for start, part in zip(vecs.starts[:-1], vecs.parts, strict=True):
        s = np.concatenate([best_s, queries @ np.asarray(part, dtype=np.float32).T], 1)
        i = np.concatenate([best_i, np.broadcast_to(np.arange(len(part)) + start, (len(queries), len(part)))], 1)
        keep = np.argpartition(-s, min(k, s.shape[1] - 1), 1)[:, :k]
        best_s, best_i = np.take_along_axis(s, keep, 1), np.take_along_axis(i, keep, 1)
    return best_i


class VectorIndex(Protocol):
    """What re-ranking needs of an index: top-k search (any faiss index is one)."""

    def search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...


class Rerank:
    """Exact re-ranking of an approximate index's top `candidates` against the full vectors."""

    def __init__(self, vectors: ShardVectors, candidates: int = 100):
        if candidates < 1:
            raise RetrievalError(f"rerank candidates must be >= 1, got {candidates}")
        self.vectors = vectors
        self.candidates = int(candidates)

    def fetch(self, k: int) -> int:
        """How many approximate hits to ask the index for, to return `k`."""
        return max(k, self.candidates)

    def __call__(self, queries: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores and ids of the best `k` among each query's candidate `ids` (-1: none),
        best first; rows with fewer than `k` candidates are padded with score -inf and id -1."""
        scores = np.full((len(ids), k), -np.inf, np.float32)
        top = np.full((len(ids), k), -1, np.int64)
        for r, (q, cand) in enumerate(zip(queries, ids, strict=True)):
            cand = np.unique(cand[cand >= 0])
            if not len(cand):
                continue
            s = self.vectors.rows(cand) @ np.asarray(q, np.float32)
            best = np.argsort(-s, kind="stable")[:k]
            scores[r, : len(best)], top[r, : len(best)] = s[best], cand[best]
        return scores, top

    def search(self, index: VectorIndex, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """`index`'s top `fetch(k)` candidates for each query, re-ranked: the best `k` by exact score."""
        _, ids = index.search(queries, min(self.fetch(k), self.vectors.n))
        return self(queries, ids, k)
