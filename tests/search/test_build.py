"""Streamed, sharded, resumable dense builds: `workbench index build` and `build_dense`."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError, RetrievalError
from workbench.kernel.procs import process_tree
from workbench.search import BuildConfig, Corpus, DenseRetriever, build_dense, load_index, serve_in_thread
from workbench.search.build import (
    ShardVectors,
    auto_index,
    count_rows,
    fill_index,
    index_factory,
    measure_recall,
    save_atomic,
    shard_batches,
)
from workbench.search.corpus import iter_jsonl

N_PASSAGES, SHARD = 120, 10


def cli(*args):
    return [sys.executable, "-m", "workbench.cli", "index", "build", *map(str, args)]


@pytest.fixture(scope="module")
def small_corpus(world, tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    Corpus.from_rows(world[0].rows[:N_PASSAGES]).to_jsonl(path)
    return path


@pytest.fixture(scope="module")
def uninterrupted(small_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "idx"
    res = subprocess.run(
        cli("--corpus", small_corpus, "--out", out, "--shard-size", SHARD, "--workers", 2),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return out, res


@pytest.mark.slow
def test_build_prints_progress_and_recall_and_serves(uninterrupted, world, encoder):
    out, res = uninterrupted
    assert "passage/s" in res.stderr and "encoding passages" in res.stderr  # tqdm: rate and ETA
    assert "index SQfp16: 120 passages, recall@10 vs exact" in res.stdout  # auto: half-precision scan
    rec = json.loads((out / "recall.json").read_text())
    assert rec["recall"] >= 0.99 and rec["passages"] == N_PASSAGES and rec["index"] == "SQfp16"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["index"] == "SQfp16" and meta["count"] == N_PASSAGES and meta["query_backend"] == "onnx-int8"
    assert meta["rerank"] == 0  # nothing to gain over half-precision scores
    r = load_index(out)
    assert isinstance(r, DenseRetriever)
    # Same vectors as encoding the whole corpus at once (batch composition changes only rounding),
    # stored in half precision (relative error <= 2**-11).
    want = encoder.encode_passages(world[0].contents()[:N_PASSAGES])
    assert np.allclose(r.cpu_index.reconstruct_n(0, N_PASSAGES), want, atol=1e-3)
    q = world[1][0]["question"]
    with serve_in_thread(r, topk=3) as url:
        got = httpx.post(url + "/retrieve", json={"queries": [q], "topk": 3, "return_scores": True}).json()["result"][0]
    assert [e["document"]["id"] for e in got] == [h.id for h in r.search(q, 3)]


@pytest.mark.slow
def test_killed_build_resumes_to_the_same_index(small_corpus, uninterrupted, tmp_path):
    out = tmp_path / "idx"
    proc = subprocess.Popen(
        cli("--corpus", small_corpus, "--out", out, "--shard-size", SHARD, "--workers", 2),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 900
    while not (out / "shards" / "000000.npy").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)  # the build and its encoding workers, mid-way
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    kept = sorted(p.name for p in (out / "shards").glob("0*.npy"))
    assert 1 <= len(kept) < N_PASSAGES // SHARD, kept
    assert not (out / "index.faiss").exists()
    res = subprocess.run(
        cli("--corpus", small_corpus, "--out", out, "--shard-size", SHARD, "--workers", 2),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"resuming: {len(kept)} of {N_PASSAGES // SHARD} shards already encoded" in res.stdout + res.stderr
    full = uninterrupted[0]
    for name in sorted(p.name for p in (full / "shards").glob("0*.npy")):
        assert np.array_equal(np.load(out / "shards" / name), np.load(full / "shards" / name)), name
    assert (out / "index.faiss").read_bytes() == (full / "index.faiss").read_bytes()
    assert (out / "corpus.jsonl").read_bytes() == (full / "corpus.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hnsw-sq", "ivfpq", "hnsw"])
def test_other_index_types_from_finished_shards_load_memory_mapped(
    uninterrupted, small_corpus, tmp_path, world, kind, capsys
):
    out = tmp_path / "idx"
    shutil.copytree(uninterrupted[0] / "shards", out / "shards")  # all encoded: only the index is built
    build_dense(small_corpus, out, index=kind, shard_size=SHARD, workers=2)
    assert "recall@10 vs exact" in capsys.readouterr().out
    rec = json.loads((out / "recall.json").read_text())
    assert rec["index"] == index_factory(kind, N_PASSAGES, 384) and 0 <= rec["recall"] <= 1
    qs = [q["question"] for q in world[1][:20]]
    mapped, loaded = load_index(out, mmap=True), load_index(out, mmap=False)
    assert [[h.id for h in r] for r in mapped.retrieve(qs)] == [[h.id for h in r] for r in loaded.retrieve(qs)]


@pytest.mark.slow
def test_killing_the_build_alone_stops_its_encoding_workers(small_corpus, tmp_path):
    """A worker left running by a killed build would go on writing shards into a later build's directory."""
    out = tmp_path / "idx"
    proc = subprocess.Popen(
        cli("--corpus", small_corpus, "--out", out, "--shard-size", SHARD, "--workers", 2),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 900
    while not (out / "shards" / "000000.npy").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    workers = [p for p in process_tree(proc.pid) if p != proc.pid]
    assert workers, "the build should be encoding in worker processes"
    proc.kill()  # the build only, not its process group
    proc.wait()
    deadline = time.monotonic() + 30
    while any(os.path.exists(f"/proc/{p}") for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in workers if os.path.exists(f"/proc/{p}")]


@pytest.mark.slow
def test_resume_with_other_settings_is_refused(uninterrupted, small_corpus, tmp_path):
    out = tmp_path / "idx"
    shutil.copytree(uninterrupted[0] / "shards", out / "shards")
    with pytest.raises(RetrievalError, match="--fresh"):
        build_dense(small_corpus, out, shard_size=SHARD + 1, show_progress=False)


@pytest.mark.parametrize("kind", ["ivfpq", "hnsw-sq", "hnsw", "ivf", "flat", "flat16"])
def test_compressed_types_report_recall_against_exact(tmp_path, kind, clustered):
    x = clustered(6000)
    for i in range(3):
        save_atomic(tmp_path / f"{i:06d}.npy", x[i * 2000 : (i + 1) * 2000])
    vecs = ShardVectors(tmp_path, 3)
    cfg = BuildConfig(train_size=4000, show_progress=False, nprobe=16, ef_search=64)
    spec = index_factory(kind, vecs.n, vecs.d)
    index = fill_index(vecs, spec, cfg)
    assert index.ntotal == 6000
    rec = measure_recall(index, vecs, cfg, spec)
    # The same recall, computed here by brute force.
    qids = np.sort(np.random.default_rng(cfg.seed + 1).choice(6000, 200, replace=False))
    exact = np.argsort(-(x[qids] @ x.T), 1)[:, :11]
    _, approx = index.search(x[qids], 11)
    want = np.mean(
        [len(set(a[a != s][:10]) & set(e[e != s][:10])) / 10 for a, e, s in zip(approx, exact, qids, strict=True)]
    )
    assert rec["recall"] == pytest.approx(want)
    assert rec["recall"] >= {"flat": 0.99, "flat16": 0.99, "hnsw": 0.95, "ivf": 0.95, "hnsw-sq": 0.9}.get(kind, 0.3)
    if kind == "ivf":  # exact scores over a superset of candidates: recall never falls as nprobe grows
        assert list(rec["recall_by_nprobe"].values()) == sorted(rec["recall_by_nprobe"].values())


def test_size_aware_default():
    assert auto_index(10_000, 384) == "flat16"
    assert index_factory("auto", 200_000, 384) == "SQfp16" and index_factory("flat", 5, 8) == "Flat"
    assert auto_index(200_001, 384) == auto_index(1_000_000, 384) == "ivfpq"
    assert auto_index(21_000_000, 768) == "ivfpq"
    assert index_factory("auto", 21_000_000, 768) == "IVF8192,PQ384x4fs"  # 192 + 8 of 3072 bytes a vector
    assert index_factory("ivfpq", 1_000_000, 384) == "IVF2048,PQ192x4fs"  # 96 + 8 of 1536
    assert index_factory("hnsw-sq", 5, 8) == "HNSW32,SQ8"


def test_bad_inputs_name_the_fix(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        build_dense(tmp_path / "nope.jsonl", tmp_path / "o")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(ConfigError, match="no passages"):
        build_dense(empty, tmp_path / "o", show_progress=False)
    with pytest.raises(ConfigError, match="shard_size"):
        build_dense(empty, tmp_path / "o", shard_size=0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"contents": "a"}\n{oops\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2: not valid JSON"):
        list(shard_batches(bad, 10))


rows = st.lists(
    st.one_of(
        st.fixed_dictionaries({"contents": st.text(st.characters(codec=None, exclude_categories=()))}),
        st.fixed_dictionaries({"title": st.text(), "text": st.text()}),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(rows, st.integers(1, 7), st.booleans())
def test_streamed_shards_hold_every_row_in_order(tmp_path_factory, data, shard_size, ascii_only):
    path = tmp_path_factory.mktemp("c") / "c.jsonl"
    with path.open("w", encoding="utf-8", errors="surrogatepass") as f:
        for r in data:
            f.write(json.dumps(r, ensure_ascii=ascii_only) + "\n\n")
    want = [r["contents"] for r in iter_jsonl(path)]
    assert len(want) == len(data) == count_rows(path)
    got = [t for batch in shard_batches(path, shard_size) for t in batch]
    assert got == want and all(len(b) <= shard_size for b in shard_batches(path, shard_size))
