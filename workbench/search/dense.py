"""Dense retrieval: a local sentence encoder plus a FAISS index over L2-normalised vectors.

    corpus = Corpus.from_jsonl("corpus.jsonl")
    dense = DenseRetriever.build(corpus)                  # MiniLM, exact IndexFlatIP
    dense.search("who founded Varnholt", top_k=3)
    dense.save("runs/index")                              # index.faiss + meta.json + corpus.jsonl
    dense = DenseRetriever.load("runs/index")             # memory-mapped, read-only

`index=` takes `"flat"` (exact cosine, Search-R1's `Flat`), `"flat16"` (the same scan over
half-precision vectors: half the memory, ~1.7x faster a query, slower in batches), `"ivf"` (IVF-Flat, `nprobe` lists
probed), `"hnsw"` (HNSW32) or any `faiss.index_factory` string. With faiss-gpu installed the index
is sharded over all GPUs (`faiss.index_cpu_to_all_gpus`, fp16), as Search-R1's `--faiss_gpu`.

Same query, same hits: a query's vector never depends on its batch-mates (see `encoder`), and neither
do its hits. A flat index ranks a batch through BLAS and a lone query without it, and the two round
differently (scores apart by up to 5e-7, measured); so a flat index's top `k + RESCORE_MARGIN` are
scored again query by query (float64 products, summed in a fixed order) and ranked by that score,
ties to the lower row. Other types score each query on its own already.

Threads: builds use every available core. A small query batch (< 20) is scanned on one OpenMP
thread per range of rows: on a busy 2-core machine two OpenMP threads over one query were ~2x
slower than one at 100k passages (20 ms vs 44-59 ms median, measured), because faiss splits a
search by queries; so a large flat or scalar-quantised index is scanned as `search_threads`
(default: up to 2) row ranges in parallel threads instead (`scan.RangeScanner`), the hits the same,
while the machine has that many cores idle (a busy machine scans whole: the split only adds hand-offs).
Batches of a few queries or more go through BLAS (see `set_threads` for faiss's threshold, which is
process-wide).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import ConfigError, RetrievalError
from workbench.search.corpus import Corpus
from workbench.search.encoder import Encoder, available_cpus
from workbench.search.hits import Hit, RetrieverBase, check_queries
from workbench.search.scan import RangeScanner, has_idle_cores, ranked, splits_by_rows
from workbench.search.vectors import Rerank, ShardVectors, shard_path

FORMAT_VERSION = 1
RESCORE_MARGIN = 16  # candidates beyond k that a flat index returns for re-scoring
SMALL_BATCH = 20  # fewer queries than this scan on one OpenMP thread each; more go through BLAS
SCAN_PARTS = 2  # the default number of row ranges a small batch's scan is split into


@contextlib.contextmanager
def faiss_threads(n: int | None) -> Iterator[None]:
    """Temporarily cap faiss's OpenMP threads (None: leave as is)."""
    import faiss

    if n is None:
        yield
        return
    old = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(old)


def set_threads(threads: int | None) -> None:
    """Cap faiss (OpenMP) and torch threads; default: the CPUs this process may run on."""
    import faiss

    n = threads or available_cpus()
    if threads or faiss.omp_get_max_threads() > n:
        faiss.omp_set_num_threads(n)
    # faiss 1.15 scans without BLAS while nq*d < 128000, a cut tuned for many-core servers; on few
    # cores BLAS wins from nq*d ~ 800 per thread (faiss PR #5109). Measured here (2 CPUs, 100k x 384,
    # batch 64): 36 ms with BLAS vs 275-490 ms without.
    faiss.cvar.distance_compute_blas_threshold = 800 * n
    import torch

    if threads or torch.get_num_threads() > n:
        torch.set_num_threads(n)


def factory_string(kind: str, n: int) -> str:
    """Map a short index name to a `faiss.index_factory` description."""
    if kind == "flat":
        return "Flat"
    if kind == "flat16":  # exhaustive scan of half-precision vectors: half the bytes read per query
        return "SQfp16"
    if kind == "ivf":  # ~4·sqrt(n) lists, but at least 39 training points per list
        return f"IVF{max(1, min(int(4 * math.sqrt(n)), n // 39))},Flat"
    if kind == "hnsw":
        return "HNSW32,Flat"
    return kind  # already a factory string


def build_faiss_index(vectors: np.ndarray, kind: str = "flat", *, nprobe: int = 16, ef_search: int = 64) -> Any:
    """An inner-product FAISS index over `vectors` (trained when the type needs it)."""
    import faiss

    spec = factory_string(kind, len(vectors))
    try:
        index = faiss.index_factory(vectors.shape[1], spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ConfigError(
            f"bad faiss index spec {spec!r}: use 'flat', 'ivf', 'hnsw' or a faiss.index_factory string ({exc})"
        ) from None
    if not index.is_trained:
        index.train(vectors)
    index.add(vectors)
    tune_index(index, nprobe=nprobe, ef_search=ef_search)
    return index


def tune_index(index: Any, *, nprobe: int = 16, ef_search: int = 64) -> None:
    import faiss

    params = faiss.ParameterSpace()
    for name, value in (("nprobe", nprobe), ("efSearch", ef_search)):
        try:
            params.set_index_parameter(index, name, value)
        except RuntimeError:
            pass  # not this index type


def is_flat(index: Any) -> bool:
    """An exact float32 index (`"flat"`), whose batch and lone-query scores round differently."""
    import faiss

    return isinstance(faiss.downcast_index(index), faiss.IndexFlat)


def to_gpu(index: Any, required: bool) -> Any:
    """Shard `index` over every visible GPU in fp16 if faiss-gpu is present (else return it)."""
    import faiss

    has_gpu = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    if not has_gpu:
        if required:
            raise RetrievalError(
                "gpu=True but faiss sees no GPU; install faiss-gpu (the 'gpu' extra) "
                "on a CUDA machine or pass gpu=False"
            )
        return index
    co = faiss.GpuMultipleClonerOptions()
    co.shard = True
    co.useFloat16 = True
    return faiss.index_cpu_to_all_gpus(index, co=co)


class DenseRetriever(RetrieverBase):
    """Encoder + FAISS index + corpus. Index row i is corpus row i."""

    def __init__(
        self,
        corpus: Corpus,
        encoder: Encoder | None,
        index: Any,
        *,
        spec: str = "flat",
        gpu: bool | None = None,
        threads: int | None = None,
        search_threads: int | None = None,
        rerank: Rerank | None = None,
    ):
        if index.ntotal != len(corpus):
            raise RetrievalError(
                f"index has {index.ntotal} vectors but the corpus has {len(corpus)} rows; "
                "rebuild the index from this corpus"
            )
        set_threads(threads)
        self.corpus = corpus
        self.encoder = encoder
        self.spec = spec
        self.search_threads = search_threads or min(SCAN_PARTS, available_cpus())
        if rerank is not None and rerank.vectors.n != index.ntotal:
            raise RetrievalError(
                f"the re-ranking vectors hold {rerank.vectors.n} rows but the index has "
                f"{index.ntotal}; rebuild the index"
            )
        self.rerank = rerank
        self.cpu_index = index
        self._flat = is_flat(index)
        self.index = index if gpu is False else to_gpu(index, required=bool(gpu))
        on_host = self.index is index
        split = on_host and self.search_threads > 1 and splits_by_rows(index)
        self._scanner = RangeScanner(index, self.search_threads) if split else None

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        encoder: Encoder | str | Path | None = None,
        *,
        index: str = "flat",
        batch_size: int = 4096,
        show_progress: bool = True,
        nprobe: int = 16,
        gpu: bool | None = None,
        threads: int | None = None,
    ) -> DenseRetriever:
        """Encode every passage (in chunks, with a progress bar) and index the vectors."""
        from tqdm.auto import tqdm

        if len(corpus) == 0:
            raise ConfigError("cannot index an empty corpus")
        set_threads(threads)
        enc = encoder if isinstance(encoder, Encoder) else Encoder(encoder)
        texts = corpus.contents()
        chunks = []
        for start in tqdm(
            range(0, len(texts), batch_size), desc="encoding passages", unit="batch", disable=not show_progress
        ):
            chunks.append(enc.encode_passages(texts[start : start + batch_size]))
        vectors = np.concatenate(chunks)
        return cls(corpus, enc, build_faiss_index(vectors, index, nprobe=nprobe), spec=index, gpu=gpu, threads=threads)

    @classmethod
    def from_vectors(
        cls,
        corpus: Corpus,
        vectors: np.ndarray,
        encoder: Encoder | None = None,
        *,
        index: str = "flat",
        gpu: bool | None = None,
    ) -> DenseRetriever:
        """Index precomputed vectors (normalised here). Without an encoder use `search_vectors`."""
        import faiss

        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        faiss.normalize_L2(vecs)
        return cls(corpus, encoder, build_faiss_index(vecs, index), spec=index, gpu=gpu)

    def search_vectors(self, vectors: np.ndarray, top_k: int = 3) -> list[list[Hit]]:
        """Top-k for already-encoded query vectors (rows of `vectors`)."""
        k = min(int(top_k), len(self.corpus))
        q = np.ascontiguousarray(vectors, dtype=np.float32)
        with faiss_threads(1 if len(vectors) < SMALL_BATCH else None):
            if self.rerank:
                scores, ids = self.rerank.search(self.index, q, k)
            elif self._flat:
                scores, ids = self._search_flat(q, k)
            else:
                scores, ids = self._scan(q, k)
        return [
            [self.corpus.hit(int(i), float(s)) for s, i in zip(srow, irow, strict=True) if i >= 0]
            for srow, irow in zip(scores, ids, strict=True)
        ]

    def _scan(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The index's top `k` for `q`, equal scores lower row first: a small batch's scan is split over
        row ranges where that pays, and either way the same candidates are ranked the same way."""
        wide = min(k + RESCORE_MARGIN, self.cpu_index.ntotal)
        if self._scanner is not None and len(q) < SMALL_BATCH and has_idle_cores(self.search_threads):
            scores, ids = self._scanner.search(q, wide)
        else:
            scores, ids = self.index.search(q, wide)
        return ranked(scores, ids, k)

    def _search_flat(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The flat index's top `k + RESCORE_MARGIN`, re-scored and ranked query by query: each row's
        scores and ids are those the query gets alone (see the module notes)."""
        _, candidates = self._scan(q, min(k + RESCORE_MARGIN, self.cpu_index.ntotal))  # ranked, so ties cut alike
        scores = np.full((len(q), k), -np.inf, np.float32)
        ids = np.full((len(q), k), -1, np.int64)
        for r, (query, row) in enumerate(zip(q.astype(np.float64), candidates, strict=True)):
            row = row[row >= 0]
            exact = (self.cpu_index.reconstruct_batch(row).astype(np.float64) * query).sum(1)
            best = np.lexsort((row, -exact))[:k]
            scores[r, : len(best)], ids[r, : len(best)] = exact[best], row[best]
        return scores, ids

    def retrieve(self, queries: list[str], top_k: int = 3) -> list[list[Hit]]:
        queries = check_queries(queries, top_k)
        if not queries:
            return []
        if self.encoder is None:
            raise RetrievalError("this index was built from raw vectors; pass an encoder or use search_vectors")
        return self.search_vectors(self.encoder.encode_queries(queries), top_k)

    def save(self, directory: str | Path, *, copy_corpus: bool = True) -> Path:
        """Write `index.faiss`, `meta.json` and the corpus (a copy, or a pointer to its file)."""
        import faiss

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self.cpu_index, str(d / "index.faiss"))
        if copy_corpus or self.corpus.path is None:
            if self.corpus.path is not None and self.corpus.path.suffix == ".jsonl":
                shutil.copyfile(self.corpus.path, d / "corpus.jsonl")
            else:
                self.corpus.to_jsonl(d / "corpus.jsonl")
            corpus_ref = "corpus.jsonl"
        else:
            corpus_ref = str(self.corpus.path.resolve())
        meta = {
            "kind": "dense",
            "format_version": FORMAT_VERSION,
            "index": self.spec,
            "count": len(self.corpus),
            "corpus": corpus_ref,
            **(
                self.encoder.describe()
                if self.encoder
                else {"encoder": None, "e5": False, "dim": int(self.cpu_index.d)}
            ),
        }
        if self.rerank is not None:
            copy_shards(self.rerank.vectors, d / "shards")
            meta["rerank"] = self.rerank.candidates
        (d / "meta.json").write_text(json.dumps(meta, indent=2))
        return d

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        mmap: bool = True,
        encoder: Encoder | str | Path | None = None,
        gpu: bool | None = None,
        threads: int | None = None,
        nprobe: int | None = None,
        ef_search: int | None = None,
        rerank: int | None = None,
    ) -> DenseRetriever:
        """Open a saved index. `mmap=True` maps the vectors from disk instead of reading them in and
        reads corpus rows on demand (`Corpus.open`: a row-offset file, 8 bytes a passage).
        `nprobe` / `ef_search` / `rerank` (candidates re-ranked exactly against the encoded shards kept
        beside the index; 0: off) default to what the index was built (and its recall measured) with."""

        d = Path(directory)
        meta = read_meta(d, "dense")
        index = read_index(d / "index.faiss", mmap)
        tune_index(index, nprobe=nprobe or meta.get("nprobe") or 16, ef_search=ef_search or meta.get("ef_search") or 64)
        corpus = Corpus.open(d / meta["corpus"]) if mmap else Corpus.from_jsonl(d / meta["corpus"])
        if isinstance(encoder, Encoder):
            enc: Encoder | None = encoder
        elif encoder is not None or meta.get("encoder"):
            enc = Encoder(encoder or meta["encoder"], e5=None if encoder else meta.get("e5"))
        else:
            enc = None
        if enc is not None and enc.dim != index.d:
            raise RetrievalError(
                f"encoder {enc.name!r} gives {enc.dim}-d vectors but the index holds "
                f"{index.d}-d ones; load with the encoder the index was built with"
            )
        candidates = meta.get("rerank", 0) if rerank is None else rerank
        reranker = Rerank(ShardVectors.open(d / "shards", count=index.ntotal), candidates) if candidates else None
        return cls(corpus, enc, index, spec=meta.get("index", "flat"), gpu=gpu, threads=threads, rerank=reranker)

    def __repr__(self) -> str:
        return f"DenseRetriever({len(self.corpus)} passages, index={self.spec!r}, encoder={self.encoder!r})"


def copy_shards(vectors: ShardVectors, dest: Path) -> None:
    """Put the re-ranking shards in `dest` (hard links where the file system allows, else copies)."""
    if dest.exists() and dest.resolve() == vectors.dir.resolve():
        return
    dest.mkdir(parents=True, exist_ok=True)
    for i in range(len(vectors.parts)):
        src, dst = shard_path(vectors.dir, i), shard_path(dest, i)
        dst.unlink(missing_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
    extra = len(vectors.parts)
    while shard_path(dest, extra).exists():  # an older, longer set of shards would not match the index
        shard_path(dest, extra).unlink()
        extra += 1


def read_index(path: Path, mmap: bool) -> Any:
    """Read a faiss index, memory-mapped when asked: flat codes (IO_FLAG_MMAP_IFC; flat, flat16,
    HNSW storage) or inverted lists (IO_FLAG_MMAP). IVF files (fourcc "Iw..") get IO_FLAG_MMAP alone:
    with IO_FLAG_MMAP_IFC as well, faiss 1.15 maps a fast-scan file and still copies its lists (twice
    the memory, measured); fast-scan lists are read in either way."""
    import faiss

    if not mmap:
        return faiss.read_index(str(path))
    with open(path, "rb") as f:
        ivf = f.read(2) == b"Iw"
    flags = faiss.IO_FLAG_MMAP | (0 if ivf else getattr(faiss, "IO_FLAG_MMAP_IFC", 0))
    try:
        return faiss.read_index(str(path), flags)
    except RuntimeError:
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP)


def read_meta(d: Path, kind: str | None = None) -> dict[str, Any]:
    """Read `meta.json` of a saved index, checking its kind and format version."""
    path = d / "meta.json"
    if not path.is_file():
        raise RetrievalError(
            f"{d} is not a saved index (no meta.json); build one with `workbench index build --corpus FILE --out DIR`"
        )
    meta = json.loads(path.read_text())
    if kind and meta.get("kind") != kind:
        raise RetrievalError(f"{d} holds a {meta.get('kind')!r} index, not {kind!r}; open it with load_index()")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise RetrievalError(f"{d} was written by a newer workbench (format {meta['format_version']}); upgrade")
    return meta
