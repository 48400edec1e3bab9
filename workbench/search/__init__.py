"""Search for agents: dense (FAISS) and BM25 retrievers, fusion, a Search-R1-compatible HTTP
server and client, and ZeroSearch-style simulated search.

    from workbench.search import Corpus, DenseRetriever, format_hits
    corpus = Corpus.from_jsonl("corpus.jsonl")          # Search-R1 rows: {"id", "contents"}
    corpus = Corpus.open("wiki.jsonl")                  # the same rows, read on demand (row-offset file)
    dense = DenseRetriever.build(corpus)                # offline MiniLM + exact IndexFlatIP
    print(format_hits(dense.search("who founded Varnholt")))
    build_dense("wiki.jsonl", "runs/wiki")              # streamed, sharded, resumable; index type by size
    dense = DenseRetriever.load("runs/wiki")            # memory-mapped

Every retriever answers `retrieve(queries, top_k) -> list[list[Hit]]` and `search(query, top_k)`.
Heavy libraries (faiss, torch, onnxruntime, bm25s, fastapi) load on first use, so this import is cheap.
"""

from workbench.search.bm25 import BM25Retriever
from workbench.search.build import BuildConfig, build_dense
from workbench.search.corpus import Corpus
from workbench.search.dense import DenseRetriever
from workbench.search.encoder import Encoder
from workbench.search.hits import Hit, Retriever, format_hits, split_contents
from workbench.search.hybrid import HybridRetriever
from workbench.search.index import build_index, load_index
from workbench.search.remote import RemoteRetriever
from workbench.search.server import serve_in_thread
from workbench.search.simulated import SimulatedSearch, noise_probability, parse_documents

__all__ = [
    "BM25Retriever",
    "BuildConfig",
    "Corpus",
    "DenseRetriever",
    "Encoder",
    "Hit",
    "HybridRetriever",
    "RemoteRetriever",
    "Retriever",
    "SimulatedSearch",
    "build_dense",
    "build_index",
    "format_hits",
    "load_index",
    "noise_probability",
    "parse_documents",
    "serve_in_thread",
    "split_contents",
]
