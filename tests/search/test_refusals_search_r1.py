"""`serve-search` refusals through Search-R1's own request code: `requests.post(url, json={"queries": [...],
"topk": k, "return_scores": True}).json()`. A malformed request's JSON names the problem and the fix (in
`detail`, where Search-R1 reads `result`), and the server answers the next request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from workbench.search import serve_in_thread
from workbench.search.server import SearchLimits

BODY = '(send {"queries": ["..."], "topk": 3, "return_scores": true})'
SERVED = 'this server serves POST /retrieve ({"queries": ["..."], "topk": 3, "return_scores": true}) and GET /health'


@pytest.fixture(scope="module")
def url(bm25) -> Iterator[str]:
    with serve_in_thread(bm25, topk=3, limits=SearchLimits(max_queries=5, max_query_chars=50)) as base:
        yield base


def search_r1_batch_search(url: str, payload: object) -> requests.Response:
    """Search-R1's `_batch_search` (search_r1/llm_agent/generation.py), less its `.json()`: the test reads both."""
    return requests.post(url, json=payload)


BAD = [
    ({"queries": "a city", "topk": 3, "return_scores": True}, f"queries: Input should be a valid list {BODY}"),
    ({"query": ["a city"], "topk": 3, "return_scores": True}, f"queries: Field required {BODY}"),
    ({"queries": [None], "topk": 3, "return_scores": True}, f"queries.0: Input should be a valid string {BODY}"),
    ({"queries": ["a"], "topk": 2.5, "return_scores": True}, "topk: Input should be a valid integer"),
    ({"queries": ["a"], "topk": 1000, "return_scores": True}, "topk must be between 1 and 100, got 1000"),
    ({"queries": ["a"], "topk": -1, "return_scores": True}, "topk must be between 1 and 100, got -1 (0 or none: "),
    ({"queries": ["a"] * 6, "topk": 3, "return_scores": True}, "6 queries in one request; the limit is 5: split"),
    ({"queries": ["a" * 51], "topk": 3, "return_scores": True}, "query 0 has 51 characters; the limit is 50: shorten"),
    ([["a city"], 3], f"body: Input should be a valid dictionary or instance of RetrieveRequest {BODY}"),
]


@pytest.mark.parametrize(("payload", "message"), BAD)
def test_a_refused_request_names_the_fix_and_the_next_is_served(url, payload, message) -> None:
    r = search_r1_batch_search(url + "/retrieve", payload)
    assert r.status_code == 422
    assert r.json()["detail"].startswith(message), r.json()
    good = search_r1_batch_search(url + "/retrieve", {"queries": ["a city"], "topk": 2, "return_scores": True})
    assert good.status_code == 200 and len(good.json()["result"][0]) == 2


def test_a_wrong_route_or_method_names_what_is_served(url) -> None:
    with requests.Session() as session:
        r = session.post(url + "/search", json={"queries": ["a"], "topk": 3, "return_scores": True})
        assert (r.status_code, r.json()) == (404, {"detail": f"POST /search is not served here; {SERVED}"})
        r = session.get(url + "/retrieve")
        assert (r.status_code, r.json()) == (405, {"detail": f"GET /retrieve is not served here; {SERVED}"})
        r = session.post(url + "/retrieve", data=b"\xff{not json")
        assert r.status_code == 400 and r.json()["detail"].endswith("; send a JSON object")
        assert session.get(url + "/health").json()["status"] == "ok"
