"""Retrieval speed and quality on synthetic worlds (workbench.worlds), against baselines measured here.

    .venv/bin/python bench/bench_search.py                 # 10k real + 100k (see below), a few minutes
    .venv/bin/python bench/bench_search.py --sizes 10000   # quicker

Per corpus size it prints:
  * dense (MiniLM + faiss IndexFlatIP): per-query latency at batch 1 (encode, search, total) and
    throughput at batch 64, with the search compared to a brute-force numpy dot product + argpartition
    over the same vectors (ratio = numpy time / faiss time, > 1 means faiss is faster);
  * BM25 (bm25s): latency at batch 1 and throughput at batch 64;
  * build rates (passages/s) and Recall@3 on the world's 1-hop questions (dense, BM25, RRF hybrid).
Encoding passages with MiniLM runs at ~100-300/s on 2 CPU cores, so above --encode-max passages
(default 10k) the dense index holds random unit vectors instead: the search latency is real for that
many vectors, the query encode time is measured on real queries, and no recall is reported for it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from workbench.search import BM25Retriever, Corpus, DenseRetriever, Encoder, HybridRetriever
from workbench.worlds import make_world


def timed(fn, repeat: int) -> float:
    """Median seconds per call."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def numpy_topk(vectors: np.ndarray, q: np.ndarray, k: int = 3) -> np.ndarray:
    scores = q @ vectors.T
    idx = np.argpartition(-scores, k, axis=1)[:, :k]
    return np.take_along_axis(idx, np.argsort(-np.take_along_axis(scores, idx, 1), 1), 1)


def recall_at_3(retriever, questions) -> float:
    res = retriever.retrieve([q.question for q in questions], top_k=3)
    return sum(bool({h.id for h in hs} & set(q.metadata["support"])) for hs, q in zip(res, questions)) / len(questions)


def bench_size(n: int, encoder: Encoder, args: argparse.Namespace) -> None:
    world = make_world(0, n, n_train=2000, n_test=200)
    corpus = Corpus.from_rows(world.corpus())
    one_hop = [t for t in world.tasks("train") + world.tasks("test") if t.metadata["hops"] == 1][: args.questions]
    queries = [t.question for t in one_hop]
    batch = (queries * 64)[:64]
    print(f"\n== {n:,} passages ({len(one_hop)} one-hop questions)")

    real = n <= args.encode_max
    t = time.perf_counter()
    if real:
        dense = DenseRetriever.build(corpus, encoder, show_progress=False)
        build = time.perf_counter() - t
        print(f"dense build: {n / build:8.0f} passages/s (MiniLM encode + IndexFlatIP add), {build:.1f} s")
    else:
        vecs = np.random.default_rng(0).standard_normal((n, encoder.dim)).astype(np.float32)
        dense = DenseRetriever.from_vectors(corpus, vecs, encoder)
        build = time.perf_counter() - t
        print(f"dense build: RANDOM unit vectors (encoding {n:,} passages would take too long here); "
              f"faiss add {n / build:,.0f} vectors/s")
    vectors = dense.cpu_index.reconstruct_n(0, n)

    q1 = encoder.encode_queries(queries[:1])
    q64 = encoder.encode_queries(batch)
    enc1 = timed(lambda: encoder.encode_queries(queries[:1]), args.repeat)
    search1 = timed(lambda: dense.search_vectors(q1, 3), args.repeat)
    base1 = timed(lambda: numpy_topk(vectors, q1), args.repeat)
    total1 = timed(lambda: dense.search(queries[0], 3), args.repeat)
    enc64 = timed(lambda: encoder.encode_queries(batch), max(3, args.repeat // 5))
    search64 = timed(lambda: dense.search_vectors(q64, 3), max(3, args.repeat // 5))
    base64 = timed(lambda: numpy_topk(vectors, q64), max(3, args.repeat // 5))
    same = np.mean([set(a) == {int(h.id) for h in b}
                    for a, b in zip(numpy_topk(vectors, q64), dense.search_vectors(q64, 3))])
    print(f"dense batch 1 : encode {enc1 * 1e3:6.2f} ms + search {search1 * 1e3:6.2f} ms "
          f"= {total1 * 1e3:6.2f} ms/query (end to end, target <= 20 ms)")
    print(f"               search vs numpy brute force {base1 * 1e3:6.2f} ms: ratio {base1 / search1:5.2f}x")
    print(f"dense batch 64: {64 / (enc64 + search64):8.0f} queries/s (encode {enc64 * 1e3:.1f} ms, "
          f"search {search64 * 1e3:.1f} ms; numpy {base64 * 1e3:.1f} ms, ratio {base64 / search64:5.2f}x; "
          f"same top-3 as numpy: {same:.0%})")

    t = time.perf_counter()
    bm25 = BM25Retriever.build(corpus, show_progress=False)
    build = time.perf_counter() - t
    bm1 = timed(lambda: bm25.search(queries[0], 3), args.repeat)
    bm64 = timed(lambda: bm25.retrieve(batch, 3), max(3, args.repeat // 5))
    print(f"bm25 build    : {n / build:8.0f} passages/s ({build:.1f} s)")
    print(f"bm25 batch 1  : {bm1 * 1e3:6.2f} ms/query; batch 64: {64 / bm64:8.0f} queries/s "
          f"(dense/bm25 latency ratio {total1 / bm1:5.2f})")

    rec_bm = recall_at_3(bm25, one_hop)
    if real:
        rec_d = recall_at_3(dense, one_hop)
        rec_h = recall_at_3(HybridRetriever([dense, bm25]), one_hop)
        print(f"recall@3 (1-hop): dense {rec_d:.3f}  bm25 {rec_bm:.3f}  hybrid-rrf {rec_h:.3f}")
    else:
        print(f"recall@3 (1-hop): bm25 {rec_bm:.3f}  (dense: random vectors, not meaningful)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated passage counts")
    ap.add_argument("--encode-max", type=int, default=10_000, help="largest corpus encoded for real")
    ap.add_argument("--questions", type=int, default=300, help="1-hop questions for recall")
    ap.add_argument("--repeat", type=int, default=30, help="timing repetitions (median reported)")
    args = ap.parse_args()
    import faiss
    import torch

    encoder = Encoder()
    print(f"encoder {encoder!r}; faiss {faiss.__version__} ({faiss.omp_get_max_threads()} threads), "
          f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.1f} "
          f"on {len(os.sched_getaffinity(0))} CPUs (timings are only comparable within one run)")
    for n in (int(s) for s in args.sizes.split(",")):
        bench_size(n, encoder, args)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
