"""Build and open saved indexes of any kind (what the CLI and the server use).

build_index("corpus.jsonl", "runs/idx", kind="dense")   # or kind="bm25"
retriever = load_index("runs/idx")                       # DenseRetriever or BM25Retriever
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.search.bm25 import BM25Retriever
from workbench.search.corpus import Corpus
from workbench.search.dense import DenseRetriever, read_meta
from workbench.search.hits import RetrieverBase

KINDS = ("dense", "bm25")


def build_index(
    corpus: str | Path | Corpus,
    out: str | Path,
    *,
    kind: str = "dense",
    encoder: str | Path | None = None,
    index: str = "flat",
    show_progress: bool = True,
    **kwargs: Any,
) -> RetrieverBase:
    """Index a corpus (a JSONL path or a `Corpus`) and save it under `out`."""
    if kind not in KINDS:
        raise ConfigError(f"index kind must be one of {KINDS}, got {kind!r}")
    c = corpus if isinstance(corpus, Corpus) else Corpus.from_jsonl(corpus)
    r: DenseRetriever | BM25Retriever
    if kind == "dense":
        r = DenseRetriever.build(c, encoder, index=index, show_progress=show_progress, **kwargs)
    else:
        r = BM25Retriever.build(c, show_progress=show_progress, **kwargs)
    r.save(out)
    return r


def load_index(directory: str | Path, *, mmap: bool = True, **kwargs: Any) -> RetrieverBase:
    """Open whatever `build_index` saved in `directory`. With `mmap=True` the index is mapped from
    disk and corpus rows are read on demand (`Corpus.open`), so a Wikipedia-sized index loads in
    little memory; `mmap=False` reads both in."""
    kind = read_meta(Path(directory)).get("kind")
    if kind == "dense":
        return DenseRetriever.load(directory, mmap=mmap, **kwargs)
    if kind == "bm25":
        return BM25Retriever.load(directory, mmap=mmap)
    raise ConfigError(f"{directory}: unknown index kind {kind!r} in meta.json")
