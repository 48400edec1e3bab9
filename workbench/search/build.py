"""Dense indexes of corpora too large for memory: streamed, sharded, resumable, multi-process.

    build_dense("wiki.jsonl", "runs/wiki-idx")                # index type chosen by size
    build_dense("wiki.jsonl", "runs/wiki-idx", index="ivfpq", workers=8)

The JSONL corpus is read as a stream, `shard_size` passages at a time; each shard is encoded (CPU:
`workers` processes on one thread each; with a GPU: batched in this process) and written to
`out/shards/NNNNNN.npy` as soon as it finishes. A build that is killed resumes where it stopped:
finished shards are kept, and the rest are encoded again from the stream. Then the index is
trained on a seeded sample of the vectors, filled shard by shard, and written to `out/index.faiss`
beside `meta.json`, a copy of the corpus and `recall.json`: recall@k of the index against exact
search on the same queries (a seeded sample of stored vectors; each query's own row excluded).

Index types (`index=`): `flat` (exact), `flat16` (exhaustive over half-precision vectors), `ivfpq`
(IVF + 4-bit fast-scan product quantisation, within 1/8 of the flat index's memory), `hnsw-sq` (HNSW32
over 8-bit codes), `hnsw` (HNSW32 over floats), `ivf` (IVF-Flat) or any `faiss.index_factory` string;
`auto` picks by size (see `auto_index`). Types that rank by short codes re-rank their top `rerank`
candidates exactly against the shards (memory-mapped), and the search-time knob (nprobe / efSearch)
is tuned to the fewest that reach `target_recall` unless given.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from workbench.children import die_with_parent
from workbench.configfile import Config, config_field
from workbench.errors import ConfigError, RetrievalError
from workbench.search.corpus import iter_jsonl
from workbench.search.dense import FORMAT_VERSION, factory_string, tune_index
from workbench.search.encoder import Encoder, available_cpus
from workbench.search.vectors import Rerank, ShardVectors, exact_top, save_atomic, shard_path

FLAT_MAX = 200_000  # auto: exhaustive search up to here (~0.15 GB at 384-d in fp16, one query ~13 ms on a core)
RECALL_SEED_OFFSET = 1
"""The recall queries are sampled with seed + 1: apart from the index's training sample (seeded with seed)."""


@dataclass
class BuildConfig(Config):
    """How `build_dense` encodes and indexes a corpus (the CLI's flags map one to one)."""

    index: str = config_field("auto", "auto | flat | flat16 | hnsw-sq | hnsw | ivfpq | ivf | factory string")
    encoder: str | None = config_field(None, "local encoder dir (default: packaged MiniLM)")
    shard_size: int = config_field(20_000, "passages per shard file (the unit of resume)")
    workers: int | None = config_field(None, "encoding processes on CPU (default: CPUs)")
    device: str = config_field("auto", "cpu | cuda | auto (cuda when torch sees a GPU)")
    batch_size: int = config_field(64, "passages per encoder call")
    train_size: int = config_field(100_000, "vectors sampled to train IVF / PQ / SQ")
    recall_queries: int = config_field(200, "queries for recall@k vs exact")
    recall_k: int = config_field(10, "k of the stored recall@k")
    nprobe: int | None = config_field(
        None, "IVF lists probed per query (default: the fewest that reach --target-recall)"
    )
    ef_search: int | None = config_field(
        None, "HNSW candidates per query (default: the fewest that reach --target-recall)"
    )
    target_recall: float = config_field(0.95, "recall@k vs exact the search-time parameter is tuned to reach")
    rerank: int = config_field(
        100, "compressed types: candidates re-ranked exactly against the stored vectors, memory-mapped (0: off)"
    )
    seed: int = config_field(0, "seed of the training and recall samples")
    fresh: bool = config_field(False, "drop finished shards and start over")
    show_progress: bool = config_field(True, "tqdm bars with rate and ETA")

    def check(self) -> None:
        for name in ("shard_size", "batch_size", "train_size", "recall_queries", "recall_k", "nprobe", "ef_search"):
            if getattr(self, name) is not None and int(getattr(self, name)) < 1:
                raise ConfigError(f"BuildConfig.{name}: must be >= 1, got {getattr(self, name)}")
        if not 0 < self.target_recall <= 1:
            raise ConfigError(f"BuildConfig.target_recall: must be in (0, 1], got {self.target_recall}")
        if self.rerank < 0:
            raise ConfigError(f"BuildConfig.rerank: must be >= 0 (0: off), got {self.rerank}")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"BuildConfig.workers: must be >= 1, got {self.workers}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"BuildConfig.device: must be auto, cpu or cuda, got {self.device!r}")


def auto_index(n: int, d: int) -> str:
    """The default index type for `n` vectors of dimension `d`: flat16, then ivfpq.

    Up to FLAT_MAX an exhaustive scan; over half-precision vectors because one query reads every
    vector and the scan is memory-bound: at 100k x 384 on one core 6.7 ms vs 11.4 ms for float32,
    recall@10 vs exact 1.000. Batches are the other way round (64 queries: 220 ms vs 43 ms for
    float32 through BLAS), so a server answering large batches is better off with "flat".

    Above, IVF-PQ with re-ranking: at 1M x 384 (bench_search.py) it beat HNSW-SQ on every count:
    recall@10 0.966 vs 0.905, 1.3 vs 4.9 ms a query, 7% vs 43% of the flat index's memory, 25 s vs
    205 s to build."""
    return "flat16" if n <= FLAT_MAX else "ivfpq"


def index_factory(kind: str, n: int, d: int) -> str:
    """A `faiss.index_factory` string for an index type name and corpus size."""
    if kind == "auto":
        kind = auto_index(n, d)
    if kind == "hnsw-sq":
        return "HNSW32,SQ8"
    if kind == "ivfpq":
        nlist = max(1, min(1 << round(math.log2(max(1.0, 2 * math.sqrt(n)))), n // 39))
        # 4-bit PQ codes scanned with SIMD ("fast scan"), two dimensions a sub-quantiser: d/4 bytes a
        # vector + 8 for its id, within 1/8 of the flat index (4d bytes) from d = 32 on. Scanning is
        # cheap enough to probe many lists; the top candidates are then re-ranked exactly.
        m = d // 2 if d % 2 == 0 else d
        return f"IVF{nlist},PQ{m}x4fs"
    return factory_string(kind, n)


# ---- shards ---------------------------------------------------------------------------------


def count_rows(path: Path) -> int:
    """Non-blank lines of a JSONL file (the progress bar's total), counted without parsing JSON."""
    n = 0
    with path.open("rb") as f:
        for line in f:
            n += bool(line.strip())
    return n


def shard_batches(path: Path, shard_size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for row in iter_jsonl(path):
        batch.append(row["contents"])
        if len(batch) == shard_size:
            yield batch
            batch = []
    if batch:
        yield batch


_WORKER: dict[str, Any] = {}


def _worker_init(encoder: str | None, batch_size: int, encoded: Any, build_pid: int) -> None:
    die_with_parent(parent=build_pid)  # a killed build leaves no worker encoding (and writing shards) on its own
    _WORKER["enc"] = Encoder(encoder, batch_size=batch_size, threads=1)
    _WORKER["encoded"] = encoded


def _count(n: int) -> None:
    with _WORKER["encoded"].get_lock():
        _WORKER["encoded"].value += n


def _worker_encode(i: int, texts: list[str], out: str) -> int:
    save_atomic(Path(out), _WORKER["enc"].encode_passages(texts, on_batch=_count))
    return i


def encode_shards(corpus: Path, shards: Path, cfg: BuildConfig, enc: Encoder) -> int:
    """Encode every missing shard of `corpus` into `shards/`; returns the number of rows. The bar
    moves with every encoded batch (workers count into a shared counter), not only per shard."""
    from tqdm.auto import tqdm

    total = count_rows(corpus)
    if total == 0:
        raise ConfigError(f"{corpus} holds no passages; nothing to index")
    n_shards = math.ceil(total / cfg.shard_size)
    done = {i for i in range(n_shards) if shard_path(shards, i).is_file()}
    done_rows = sum(min(cfg.shard_size, total - i * cfg.shard_size) for i in done)
    bar = tqdm(
        total=total,
        initial=done_rows,
        unit="passage",
        unit_scale=True,
        desc="encoding passages",
        disable=not cfg.show_progress,
        smoothing=0.1,
    )
    if done:
        bar.write(f"resuming: {len(done)} of {n_shards} shards already encoded")
    workers = 1 if enc.device != "cpu" else (cfg.workers or available_cpus())
    ctx = get_context("spawn")
    encoded = ctx.Value("q", 0)
    pool = None
    if workers > 1 and len(done) < n_shards - 1:
        pool = ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=_worker_init,
            initargs=(cfg.encoder, cfg.batch_size, encoded, os.getpid()),
        )

    def finish(fut: Future) -> None:
        while not fut.done():
            wait([fut], timeout=0.5)
            bar.update(done_rows + encoded.value - bar.n)
        fut.result()

    pending: list[Future] = []
    try:
        for i, texts in enumerate(shard_batches(corpus, cfg.shard_size)):
            if i in done:
                continue
            out = shard_path(shards, i)
            if pool is None:
                save_atomic(out, enc.encode_passages(texts, on_batch=bar.update))
                continue
            pending.append(pool.submit(_worker_encode, i, texts, str(out)))
            while len(pending) >= 2 * workers:  # bounded: at most 2 shards of text per worker in memory
                finish(pending.pop(0))
        for fut in pending:
            finish(fut)
        bar.update(total - bar.n)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        bar.close()
    return total


# ---- index ----------------------------------------------------------------------------------


def fill_index(vecs: ShardVectors, spec: str, cfg: BuildConfig) -> Any:
    """Train `spec` on a seeded sample of the vectors, then add them shard by shard."""
    import faiss

    try:
        index = faiss.index_factory(vecs.d, spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ConfigError(
            f"bad index type {spec!r}: use auto, flat, hnsw-sq, hnsw, ivfpq, ivf or a "
            f"faiss.index_factory string ({exc})"
        ) from None
    if not index.is_trained:
        rng = np.random.default_rng(cfg.seed)
        nlist = getattr(faiss.try_extract_index_ivf(index), "nlist", 0)
        want = max(cfg.train_size, 39 * nlist)  # faiss's k-means asks for 39 points a list
        sample = np.sort(rng.choice(vecs.n, min(vecs.n, want), replace=False))
        t = time.perf_counter()
        index.train(vecs.rows(sample))
        if cfg.show_progress:
            print(f"trained {spec} on {len(sample):,} vectors in {time.perf_counter() - t:.1f} s", flush=True)
    from tqdm.auto import tqdm

    for part in tqdm(vecs.parts, desc="adding to index", unit="shard", disable=not cfg.show_progress):
        index.add(np.ascontiguousarray(part, dtype=np.float32))
    tune_index(index, nprobe=cfg.nprobe or 32, ef_search=cfg.ef_search or 128)  # until measure_recall tunes
    return index


def lossy(index: Any) -> bool:
    """Whether `index` ranks by codes smaller than half-precision vectors (then re-ranking pays)."""
    import faiss

    inner = faiss.downcast_index(index.storage) if hasattr(index, "storage") else index
    ivf = faiss.try_extract_index_ivf(inner)
    return (ivf.code_size if ivf is not None else inner.sa_code_size()) < 2 * inner.d


def search_knob(index: Any) -> tuple[str, list[int]] | None:
    """The search-time parameter of `index` and the values a tuning sweep tries (None: no knob)."""
    import faiss

    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        return "nprobe", sorted({min(2**i, ivf.nlist) for i in range(int(math.log2(ivf.nlist)) + 2)})
    if hasattr(index, "hnsw"):
        return "efSearch", [16, 32, 64, 128, 256, 512, 1024]
    return None


def measure_recall(
    index: Any, vecs: ShardVectors, cfg: BuildConfig, spec: str, rerank: Rerank | None = None
) -> dict[str, Any]:
    """Recall@k of `index` (re-ranked by `rerank` if given) against exact search, on stored vectors
    as queries (self excluded). The index's search-time knob (nprobe / efSearch) is swept upwards and
    left at the configured value, or else at the smallest one reaching `cfg.target_recall`."""
    import faiss

    k = min(cfg.recall_k, vecs.n - 1)
    if k < 1:
        return {"k": cfg.recall_k, "recall": 1.0, "queries": 0, "index": spec, "note": "one vector"}
    rng = np.random.default_rng(cfg.seed + RECALL_SEED_OFFSET)
    qids = np.sort(rng.choice(vecs.n, min(vecs.n, cfg.recall_queries), replace=False))
    q = vecs.rows(qids)
    exact = exact_top(vecs, q, k + 1)

    def recall(rr: Rerank | None = rerank) -> float:
        _, approx = rr.search(index, q, k + 1) if rr else index.search(q, k + 1)
        hits = [len(set(a[a != s][:k]) & set(e[e != s][:k])) / k for a, e, s in zip(approx, exact, qids, strict=True)]
        return float(np.mean(hits))

    out: dict[str, Any] = {
        "k": k,
        "queries": len(qids),
        "index": spec,
        "queries_from": "stored vectors, each query's own row excluded",
    }
    knob = search_knob(index)
    if knob is not None:
        name, values = knob
        fixed = cfg.nprobe if name == "nprobe" else cfg.ef_search
        sweep: dict[int, float] = {}
        for v in values:
            faiss.ParameterSpace().set_index_parameter(index, name, v)
            sweep[v] = round(recall(), 4)
            if sweep[v] >= cfg.target_recall and (fixed is None or v >= fixed):
                break
        reached = [v for v, r in sweep.items() if r >= cfg.target_recall]
        chosen = fixed or (reached[0] if reached else max(sweep))
        faiss.ParameterSpace().set_index_parameter(index, name, chosen)
        out |= {
            name: chosen,
            f"recall_by_{name}": {str(v): r for v, r in sweep.items()},
            "target_recall": cfg.target_recall,
        }
        if fixed is None and not reached:
            out["note"] = f"target recall {cfg.target_recall} not reached at any {name}; the largest is kept"
    out["recall"] = recall()
    if rerank is not None:
        out |= {"rerank": rerank.candidates, "recall_without_rerank": recall(None)}
    return out


# ---- the whole build ------------------------------------------------------------------------


def build_dense(corpus: str | Path, out: str | Path, config: BuildConfig | None = None, **kwargs: Any) -> Path:
    """Encode `corpus` (JSONL) in resumable shards and write a dense index to `out`."""
    import faiss

    cfg = config or BuildConfig(**kwargs)
    if config is not None and kwargs:
        cfg = BuildConfig(**(asdict(config) | kwargs))
    cfg.check()
    corpus, out = Path(corpus), Path(out)
    if not corpus.is_file():
        raise ConfigError(f"corpus file {corpus} does not exist; pass a JSONL file with one passage per line")
    device = _device(cfg.device)
    enc = Encoder(cfg.encoder, device=device, batch_size=cfg.batch_size if device == "cpu" else 512)
    shards = _shard_dir(corpus, out, cfg, enc)
    t0 = time.perf_counter()
    total = encode_shards(corpus, shards, cfg, enc)
    encode_s = time.perf_counter() - t0
    vecs = ShardVectors(shards, math.ceil(total / cfg.shard_size))
    if vecs.n != total:
        raise RetrievalError(f"{shards} holds {vecs.n} vectors for {total} passages; rebuild with --fresh")
    spec = index_factory(cfg.index, vecs.n, vecs.d)
    t1 = time.perf_counter()
    index = fill_index(vecs, spec, cfg)
    index_s = time.perf_counter() - t1
    rerank = Rerank(vecs, cfg.rerank) if cfg.rerank and lossy(index) else None
    rec = (
        {"k": cfg.recall_k, "recall": 1.0, "index": spec, "note": "exact search"}
        if spec == "Flat"
        else measure_recall(index, vecs, cfg, spec, rerank)
    )
    rec |= {"passages": vecs.n, "encode_seconds": round(encode_s, 1), "index_seconds": round(index_s, 1)}
    tmp = out / "index.faiss.tmp"
    faiss.write_index(index, str(tmp))
    os.replace(tmp, out / "index.faiss")
    if corpus.resolve() != (out / "corpus.jsonl").resolve():
        shutil.copyfile(corpus, out / "corpus.jsonl")
    (out / "recall.json").write_text(json.dumps(rec, indent=2))
    meta = {
        "kind": "dense",
        "format_version": FORMAT_VERSION,
        "index": spec,
        "count": vecs.n,
        "corpus": "corpus.jsonl",
        "nprobe": rec.get("nprobe", cfg.nprobe),
        "ef_search": rec.get("efSearch", cfg.ef_search),
        "rerank": rerank.candidates if rerank else 0,
        **enc.describe(),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    if cfg.show_progress:
        _print_summary(spec, vecs.n, rec, rerank, encode_s, index_s)
    return out


def _device(device: str) -> str:
    """'auto' as cuda when torch sees a GPU, else cpu; any other device as given."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _shard_dir(corpus: Path, out: Path, cfg: BuildConfig, enc: Encoder) -> Path:
    """`out/shards`, with a manifest of the build's settings: a resumed build must match it (a
    RetrievalError naming the differing settings when it does not); `fresh` starts over."""
    shards = out / "shards"
    manifest = {
        "corpus": str(corpus.resolve()),
        "corpus_bytes": corpus.stat().st_size,
        "shard_size": cfg.shard_size,
        **enc.describe(),
    }
    manifest.pop("query_backend", None)
    if cfg.fresh and shards.exists():
        shutil.rmtree(shards)
    shards.mkdir(parents=True, exist_ok=True)
    mpath = shards / "manifest.json"
    if mpath.is_file():
        old = json.loads(mpath.read_text())
        if old != manifest:
            diff = sorted(k for k in manifest if old.get(k) != manifest[k])
            raise RetrievalError(
                f"{shards} holds shards of another build (differs in {', '.join(diff)}); "
                "pass the same settings to resume, or fresh=True (--fresh) to start over"
            )
    else:
        mpath.write_text(json.dumps(manifest, indent=2))
    return shards


def _print_summary(
    spec: str, n: int, rec: dict[str, Any], rerank: Rerank | None, encode_s: float, index_s: float
) -> None:
    how = "".join(f" at {k} {rec[k]}" for k in ("nprobe", "efSearch") if k in rec)
    if rerank:
        how += f", top {rerank.candidates} re-ranked exactly ({rec['recall_without_rerank']:.3f} without)"
    print(
        f"index {spec}: {n:,} passages, recall@{rec['k']} vs exact {rec['recall']:.3f}{how} "
        f"({rec.get('note') or str(rec['queries']) + ' queries'}); encode {encode_s:.0f} s "
        f"({n / max(encode_s, 1e-9):,.0f} passages/s), index {index_s:.0f} s",
        flush=True,
    )
