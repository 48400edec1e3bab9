"""Fuse several retrievers over the same corpus into one ranking.

    hybrid = HybridRetriever([dense, bm25])                         # reciprocal-rank fusion
    hybrid = HybridRetriever([dense, bm25], mode="weighted", weights=[0.7, 0.3])

`rrf`: score = sum over retrievers of w / (k + rank), rank from 1 (Cormack et al., k=60).
`weighted`: each retriever's candidate scores are min-max scaled to [0, 1], then summed with
weights (a missing candidate counts 0). Hits are matched by corpus row id.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.errors import ConfigError
from workbench.search.hits import Hit, Retriever, RetrieverBase, check_queries


class HybridRetriever(RetrieverBase):
    """Several retrievers over one corpus fused into one ranking: reciprocal-rank fusion (`mode="rrf"`) or weighted
    min-max-scaled scores (`mode="weighted"`)."""

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        mode: str = "rrf",
        weights: Sequence[float] | None = None,
        rrf_k: int = 60,
        candidates: int = 20,
    ):
        if mode not in ("rrf", "weighted"):
            raise ConfigError(f"fusion mode must be 'rrf' or 'weighted', got {mode!r}")
        if not retrievers:
            raise ConfigError("HybridRetriever needs at least one retriever")
        weights = list(weights) if weights is not None else [1.0] * len(retrievers)
        if len(weights) != len(retrievers):
            raise ConfigError(f"{len(weights)} weights for {len(retrievers)} retrievers; give one each")
        self.retrievers = list(retrievers)
        self.mode, self.weights, self.rrf_k, self.candidates = mode, weights, rrf_k, candidates

    def retrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]:
        queries = check_queries(queries, top_k)
        fetch = max(int(top_k), self.candidates)
        per_retriever = [r.retrieve(queries, top_k=fetch) for r in self.retrievers]
        out = []
        for qi in range(len(queries)):
            fused: dict[str, float] = {}
            first: dict[str, Hit] = {}
            for w, results in zip(self.weights, per_retriever, strict=True):
                hits = results[qi]
                for rank, h in enumerate(hits, start=1):
                    first.setdefault(h.id, h)
                    fused[h.id] = fused.get(h.id, 0.0) + w * self._part(h, rank, hits)
            best = sorted(fused, key=lambda i: -fused[i])[:top_k]
            out.append([_rescored(first[i], fused[i]) for i in best])
        return out

    def _part(self, hit: Hit, rank: int, hits: list[Hit]) -> float:
        if self.mode == "rrf":
            return 1.0 / (self.rrf_k + rank)
        lo, hi = min(h.score for h in hits), max(h.score for h in hits)
        return 1.0 if hi == lo else (hit.score - lo) / (hi - lo)


def _rescored(h: Hit, score: float) -> Hit:
    return Hit(id=h.id, title=h.title, text=h.text, score=score, contents=h.contents, document=h.document)
