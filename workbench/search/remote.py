"""A client for any Search-R1-compatible `/retrieve` server (ours, Search-R1's, Dr. Zero's).

    remote = RemoteRetriever("http://127.0.0.1:8000")       # or ".../retrieve"
    remote.search("who founded Varnholt", top_k=3)          # list[Hit], with scores
    await remote.aretrieve(["q1", "q2"])                     # async variant

Failed calls are retried `retries` times with linear backoff (verl retries 10×, 30 s timeout).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from workbench.errors import RetrievalError
from workbench.search.hits import Hit, RetrieverBase, check_queries

if TYPE_CHECKING:
    import httpx


class RemoteRetriever(RetrieverBase):
    """A client of a Search-R1-compatible `/retrieve` server; failed calls are retried with linear backoff."""

    def __init__(self, url: str, *, timeout: float = 30.0, retries: int = 3, backoff: float = 0.5):
        url = url.rstrip("/")
        self.url = url if url.endswith("/retrieve") else url + "/retrieve"
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self._client: httpx.Client | None = None  # one pooled connection for sync calls (httpx.Client is thread-safe)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _payload(self, queries: list[str], top_k: int) -> dict[str, Any]:
        return {"queries": queries, "topk": int(top_k), "return_scores": True}

    def retrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]:
        import httpx

        queries = check_queries(queries, top_k)
        if not queries:
            return []
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                if self._client is None:
                    self._client = httpx.Client(timeout=self.timeout)
                resp = self._client.post(self.url, json=self._payload(queries, top_k))
                return self._parse(resp, len(queries))
            except (httpx.TransportError, _Retryable) as exc:
                last = exc
                time.sleep(self.backoff * (attempt + 1))
        raise RetrievalError(
            f"search server at {self.url} did not answer after {self.retries + 1} tries "
            f"({last}); start one with `workbench serve-search --index DIR`"
        )

    async def aretrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]:
        import httpx

        queries = check_queries(queries, top_k)
        if not queries:
            return []
        last: Exception | None = None
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            for attempt in range(self.retries + 1):
                try:
                    resp = await client.post(self.url, json=self._payload(queries, top_k))
                    return self._parse(resp, len(queries))
                except (httpx.TransportError, _Retryable) as exc:
                    last = exc
                    await asyncio.sleep(self.backoff * (attempt + 1))
        raise RetrievalError(
            f"search server at {self.url} did not answer after {self.retries + 1} tries "
            f"({last}); start one with `workbench serve-search --index DIR`"
        )

    def _parse(self, resp: httpx.Response, n: int) -> list[list[Hit]]:
        if resp.status_code >= 500:
            raise _Retryable(f"HTTP {resp.status_code}")
        if resp.status_code != 200:
            raise RetrievalError(
                f"search server at {self.url} refused the request: HTTP {resp.status_code} {resp.text[:200]}"
            )
        try:
            result = resp.json()["result"]
        except (ValueError, KeyError):
            raise RetrievalError(
                f'{self.url} did not answer in Search-R1 format ({{"result": [...]}}); is it a /retrieve endpoint?'
            ) from None
        if len(result) != n:
            raise RetrievalError(f"{self.url} returned {len(result)} result lists for {n} queries")
        return [[parse_element(e) for e in hits] for hits in result]


def parse_element(e: dict[str, Any]) -> Hit:
    """One element of a Search-R1 result list: `{"document": row, "score": s}` or a bare row."""
    if "document" in e:
        return Hit.from_row(e["document"], float(e.get("score", 0.0)))
    return Hit.from_row(e, 0.0)


class _Retryable(Exception):
    pass
