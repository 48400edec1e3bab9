import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from workbench.errors import RetrievalError
from workbench.search import RemoteRetriever, build_index, serve_in_thread


@pytest.fixture(scope="module")
def server(bm25):
    with serve_in_thread(bm25, topk=3) as url:
        yield url


def test_search_r1_request_with_and_without_scores(server, bm25):
    qs = ["Who founded the city?", "What is the capital?"]
    r = httpx.post(server + "/retrieve", json={"queries": qs, "topk": 2, "return_scores": True})
    assert r.status_code == 200
    result = r.json()["result"]
    assert len(result) == 2 and all(len(x) == 2 for x in result)
    local = bm25.retrieve(qs, top_k=2)
    for got, want in zip(result, local, strict=True):
        assert [e["document"]["id"] for e in got] == [h.id for h in want]
        assert [e["score"] for e in got] == pytest.approx([h.score for h in want])
        assert set(got[0]["document"]) >= {"id", "contents"}
    bare = httpx.post(server + "/retrieve", json={"queries": qs[:1], "return_scores": False}).json()["result"]
    assert len(bare[0]) == 3  # server default topk
    assert bare[0][0] == local[0][0].to_row()  # the whole corpus row (world rows also carry a url)


def test_remote_retriever_matches_local(server, bm25):
    remote, by_path = RemoteRetriever(server), RemoteRetriever(server + "/retrieve")
    try:
        qs = ["Who founded the festival?", "Who directed the film?"]
        got = remote.retrieve(qs, top_k=3)
        want = bm25.retrieve(qs, top_k=3)
        assert [[(h.id, h.title, h.text) for h in r] for r in got] == [
            [(h.id, h.title, h.text) for h in r] for r in want
        ]
        assert [h.score for h in got[0]] == pytest.approx([h.score for h in want[0]])
        assert by_path.search(qs[0])[0].id == want[0][0].id
    finally:  # their pooled connections (unclosed, a ResourceWarning)
        remote.close()
        by_path.close()


def test_bad_requests_and_unreachable_server(server):
    assert (
        httpx.post(server + "/retrieve", json={"queries": ["x"], "topk": 0}).status_code == 200
    )  # 0 = server default, as Search-R1
    assert httpx.post(server + "/retrieve", json={"queries": ["x"], "topk": 1000}).status_code == 422
    assert httpx.post(server + "/retrieve", json={"topk": 3}).status_code == 422
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RetrievalError, match="serve-search"):
        RemoteRetriever(f"http://127.0.0.1:{port}", retries=1, backoff=0.01, timeout=2).search("x")


CLI = (
    "import argparse, sys; from workbench.cli import search as cli; p = argparse.ArgumentParser(); "
    "cli.register(p.add_subparsers()); a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))"
)


@pytest.mark.slow
def test_cli_index_build_and_serve_search(world, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    world[0].to_jsonl(corpus)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            "index",
            "build",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "idx"),
            "--kind",
            "bm25",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CLI,
            "serve-search",
            "--index",
            str(tmp_path / "idx"),
            "--port",
            str(port),
            "--topk",
            "2",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        remote = RemoteRetriever(f"http://127.0.0.1:{port}", retries=0, timeout=5)
        deadline = time.monotonic() + 60
        while True:
            try:
                hits = remote.search("Who founded the city?")
                break
            except RetrievalError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
                time.sleep(0.3)
        assert 1 <= len(hits) <= 3
        body = httpx.post(f"http://127.0.0.1:{port}/retrieve", json={"queries": ["x"]}).json()
        assert len(body["result"][0]) == 2  # --topk default
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_build_index_rejects_unknown_kind(world, tmp_path):
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match="dense"):
        build_index(world[0], tmp_path / "x", kind="splade")
