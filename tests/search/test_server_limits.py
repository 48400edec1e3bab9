"""serve-search under hostile clients: size and batch limits, fair turns, arbitrary bytes, SIGTERM."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.search import serve_in_thread
from workbench.search.hits import RetrieverBase
from workbench.search.server import SearchLimits


class SlowRetriever(RetrieverBase):
    """A real BM25 retriever that takes `delay` seconds per query (a big dense index on a busy CPU)."""

    def __init__(self, inner, delay: float):
        self.inner, self.delay, self.queries_done = inner, delay, 0

    def retrieve(self, queries, top_k=3):
        time.sleep(self.delay * len(queries))
        self.queries_done += len(queries)
        return self.inner.retrieve(queries, top_k=top_k)


LIMITS = SearchLimits(max_body_bytes=64 << 10, max_queries=500, max_query_chars=300, chunk=8)


@pytest.fixture(scope="module")
def server(bm25):
    with serve_in_thread(bm25, limits=LIMITS) as url:
        yield url


def test_body_over_the_limit_is_413_declared_or_streamed(server):
    r = httpx.post(server + "/retrieve", content=b"x" * (LIMITS.max_body_bytes + 1))
    assert r.status_code == 413 and str(LIMITS.max_body_bytes) in r.json()["detail"]
    assert "--max-body-bytes" in r.json()["detail"]
    streamed = httpx.post(server + "/retrieve", content=iter([b" " * 40_000] * 3))  # chunked, no Content-Length
    assert streamed.status_code == 413
    assert httpx.post(server + "/retrieve", json={"queries": ["ok"]}).status_code == 200  # still serving


def test_too_many_queries_or_too_long_a_query_is_422_naming_the_limit(server):
    r = httpx.post(server + "/retrieve", json={"queries": ["q"] * (LIMITS.max_queries + 1)})
    assert r.status_code == 422 and "500" in r.json()["detail"] and "split" in r.json()["detail"]
    r = httpx.post(server + "/retrieve", json={"queries": ["ok", "x" * 301]})
    assert r.status_code == 422 and "query 1" in r.json()["detail"] and "300" in r.json()["detail"]
    at_limit = httpx.post(server + "/retrieve", json={"queries": ["founded"] * LIMITS.max_queries, "topk": 1})
    assert at_limit.status_code == 200 and len(at_limit.json()["result"]) == LIMITS.max_queries


def test_chunked_batch_equals_one_local_batch(server, bm25, world):
    qs = [q["question"] for q in world[1][:37]]  # 37 = 4 chunks of 8 and a rest
    got = httpx.post(server + "/retrieve", json={"queries": qs, "topk": 3, "return_scores": True}).json()["result"]
    want = bm25.retrieve(qs, top_k=3)
    assert [[e["document"]["id"] for e in hits] for hits in got] == [[h.id for h in hits] for hits in want]


def test_lone_surrogates_and_invalid_utf8_are_replaced_not_refused(server, bm25):
    ref = bm25.retrieve(["who founded \ufffd it"], top_k=3)[0]
    escaped = b'{"queries": ["who founded \\ud800 it"], "topk": 3}'
    raw = b'{"queries": ["who founded \xff it"], "topk": 3}'
    for body in (escaped, raw):
        r = httpx.post(server + "/retrieve", content=body)
        assert r.status_code == 200
        assert [row["id"] for row in r.json()["result"][0]] == [h.id for h in ref]


def test_bad_bodies_get_400_or_422_with_a_message(server):
    cases = {
        b"": 400,
        b"\xff\xfe": 400,
        b"[" * 50_000: 400,
        b'{"queries": 3}': 422,
        b"[]": 422,
        b'{"queries": ["a"], "topk": "x"}': 422,
        b'{"queries": ["a"], "topk": ' + b"9" * 5000 + b"}": 400,
    }
    for body, status in cases.items():
        r = httpx.post(server + "/retrieve", content=body)
        assert (r.status_code, bool(r.json()["detail"])) == (status, True), body[:40]


def test_a_large_batch_does_not_starve_a_small_request(bm25):
    slow = SlowRetriever(bm25, delay=0.01)  # 400 queries ≈ 4 s alone
    with serve_in_thread(slow, limits=SearchLimits(chunk=8)) as url:
        big_done = threading.Event()

        def big() -> None:
            r = httpx.post(url + "/retrieve", json={"queries": [f"founded {i}" for i in range(400)]}, timeout=120)
            assert r.status_code == 200 and len(r.json()["result"]) == 400
            big_done.set()

        t = threading.Thread(target=big)
        t.start()
        while slow.queries_done == 0:
            time.sleep(0.01)
        for _ in range(3):
            r = httpx.post(url + "/retrieve", json={"queries": ["who founded it", "capital"]}, timeout=120)
            assert r.status_code == 200 and len(r.json()["result"]) == 2
            assert not big_done.is_set(), "the small request waited for the whole large batch"
        t.join()
        assert big_done.is_set()


def test_a_client_that_gives_up_stops_its_batch(bm25):
    slow = SlowRetriever(bm25, delay=0.01)
    with serve_in_thread(slow, limits=SearchLimits(chunk=8)) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url + "/retrieve", json={"queries": ["q"] * 2000}, timeout=0.5)
        time.sleep(1.0)
        done = slow.queries_done
        time.sleep(1.0)
        assert slow.queries_done == done < 2000  # nothing more ran for the request that left


def test_limits_must_be_positive():
    with pytest.raises(ConfigError, match="max_queries"):
        SearchLimits(max_queries=0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(blacklist_categories=())),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
queries_field = st.lists(st.text(st.characters(blacklist_categories=()), max_size=40), max_size=6)
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"queries": queries_field}, optional={"topk": json_values, "return_scores": json_values}).map(
        lambda v: json.dumps(v).encode()
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_any_body_gets_a_json_reply_never_a_500(server, body):
    r = httpx.post(server + "/retrieve", content=body)
    assert r.status_code in (200, 400, 413, 422), (r.status_code, r.text[:300])
    reply = r.json()
    if r.status_code == 200:
        assert isinstance(reply["result"], list)
    else:
        assert reply["detail"]


SERVE = """
import time
from workbench.search import BM25Retriever, Corpus
from workbench.search.server import serve
rows = [{{"id": str(i), "contents": f'"T{{i}}"\\nthing {{i}} was founded in {{1900 + i}}'}} for i in range(50)]
bm25 = BM25Retriever.build(Corpus.from_rows(rows), show_progress=False)
class Slow:
    def retrieve(self, queries, top_k=3):
        time.sleep(0.01 * len(queries))
        return bm25.retrieve(queries, top_k=top_k)
serve(Slow(), port={port})
"""


@pytest.mark.slow
def test_sigterm_stops_a_busy_server_promptly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = SERVE.format(port=port)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/retrieve"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.post(url, json={"queries": ["x"]}, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
                time.sleep(0.2)
        # 4000 queries at 10 ms each: 40 s of work in flight when the signal comes
        busy = threading.Thread(target=lambda: _ignore_errors(url, {"queries": ["founded"] * 4000}), daemon=True)
        busy.start()
        time.sleep(1.0)
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)  # far less than the 40 s the request needs
        took = time.monotonic() - sent
        assert proc.returncode in (0, -signal.SIGTERM), proc.stdout.read().decode()
        print(f"exited {took:.2f} s after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _ignore_errors(url: str, body: dict) -> None:
    try:
        httpx.post(url, json=body, timeout=120)
    except httpx.HTTPError:
        pass
