"""Sentence encoders run by ONNX Runtime, exported locally from a sentence-transformers model.

Nothing is downloaded: the first use exports the local torch model to ONNX (pooling and L2
normalisation inside the graph) and an int8 copy (dynamic quantisation, per-channel weights),
and caches both beside the model (`<model>/onnx-workbench/`) or, where that is read-only, under
`$XDG_CACHE_HOME/workbench/encoders/`. Later runs load the cache without importing torch.

    model = OrtModel.open("/path/to/all-MiniLM-L6-v2", "onnx-int8")
    vecs = model.encode(["who built it"], batch_size=64)   # (1, dim) float32, unit norm
    vecs = model.encode_each(queries, workers=2)           # one run per text: batch-invariant

Batches and invariance: `encode` pads a batch to its longest text, and the int8 graph quantises its
activations with one scale for the whole batch tensor (dynamic quantisation), so a text's vector
depends on its batch-mates (cosine to its vector alone down to 0.99 measured on world questions).
`encode_each` runs every text alone, unpadded: the run a text gets is the same whatever else is
encoded, so its vector is bit-for-bit the one it gets alone. Queries go that way; passages (built
once, in bulk) keep the batched path.

Measured here (bench/bench_search.py, 2 busy cores, MiniLM, batch 1): onnx-int8 ~4x faster than
torch with a cosine >= 0.98 to its vectors and the same recall@3 on world questions; onnx (fp32)
~2x, equal to torch within 1e-6.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from workbench.errors import ConfigError
from workbench.safetext import safe_text

if TYPE_CHECKING:
    from sentence_transformers.sentence_transformer.modules import Transformer

BACKENDS = ("torch", "onnx", "onnx-int8")
EXPORT_VERSION = 1


def cache_dir(model_path: Path) -> Path:
    """Where the export of `model_path` lives: beside it when writable, else in the user cache."""
    files = sorted(p for p in model_path.iterdir() if p.is_file())
    key = hashlib.sha1(
        json.dumps(
            [
                str(model_path.resolve()),
                EXPORT_VERSION,
                [(p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in files],
            ]
        ).encode()
    ).hexdigest()[:12]
    if os.access(model_path, os.W_OK):
        return model_path / "onnx-workbench" / key
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "workbench" / "encoders"
    return root / f"{model_path.name}-{key}"


def export(model_path: Path, out: Path) -> Path:
    """Export the sentence-transformers model at `model_path` to `out` (fp32 + int8 + tokenizer)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
    pooling = _pooling_mode(st)
    transformer = cast("Transformer", st[0])  # nn.Sequential indexing is typed Module
    tokenizer, dim = transformer.tokenizer, st.get_embedding_dimension()
    if tokenizer is None or dim is None:
        raise ConfigError(f"{model_path}: a sentence-transformers text model with a tokenizer is needed to export")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=out.parent))
    try:
        _export_onnx(_pooled(transformer.auto_model, pooling), names, tmp / "model.onnx")
        quantize_dynamic(
            str(tmp / "model.onnx"),
            str(tmp / "model-int8.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
        )
        tokenizer.save_pretrained(str(tmp))
        info = {
            "source": str(model_path),
            "max_length": int(st.max_seq_length or 512),
            "inputs": names,
            "dim": int(dim),
            "pooling": pooling,
            "export_version": EXPORT_VERSION,
        }
        (tmp / "encoder.json").write_text(json.dumps(info, indent=2))
        try:
            tmp.rename(out)  # atomic: a concurrent exporter that finished first wins
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _pooled(model: Any, pooling: str) -> Any:
    """`model` with its sentence embedding's pooling (cls or mean) and normalization, as one torch module."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            h = self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state
            if pooling == "cls":
                e = h[:, 0]
            else:
                m = attention_mask.unsqueeze(-1).to(h.dtype)
                e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(e, dim=-1)

    return Pooled()


def _export_onnx(module: Any, names: Sequence[str], path: Path) -> None:
    """`module` traced to ONNX at `path`, batch and sequence axes dynamic."""
    import torch

    dummy = tuple(
        torch.ones(2, 8, dtype=torch.long) if n != "token_type_ids" else torch.zeros(2, 8, dtype=torch.long)
        for n in names
    )
    axes = {n: {0: "batch", 1: "seq"} for n in names} | {"embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(
            module.eval(),
            dummy,
            str(path),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def exported(model_path: Path) -> Path:
    """The cached export of `model_path`, made now if missing."""
    d = cache_dir(model_path)
    if not (d / "encoder.json").is_file():
        export(model_path, d)
    return d


def _pooling_mode(st: Any) -> str:
    pool = st[1] if len(st) > 1 else None
    mode = getattr(pool, "pooling_mode", None) or "mean"
    if mode not in ("mean", "cls"):
        raise ConfigError(
            f"the ONNX encoder supports mean or CLS pooling, this model uses {mode!r}; pass backend='torch'"
        )
    return mode


class OrtModel:
    """An exported encoder on ONNX Runtime: tokenizer + session, `encode(texts) -> unit vectors`."""

    def __init__(self, directory: Path, variant: str, threads: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        info = json.loads((directory / "encoder.json").read_text())
        self.directory = directory
        self.variant = variant
        self.dim = int(info["dim"])
        self.inputs = list(info["inputs"])
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(info["max_length"]))
        self.tokenizer.enable_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, threads)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        name = "model-int8.onnx" if variant == "onnx-int8" else "model.onnx"
        self.session = ort.InferenceSession(str(directory / name), opts, providers=["CPUExecutionProvider"])

    @classmethod
    def open(cls, model_path: Path, variant: str = "onnx", *, threads: int = 1) -> OrtModel:
        if variant not in ("onnx", "onnx-int8"):
            raise ConfigError(f"ONNX variant must be 'onnx' or 'onnx-int8', got {variant!r}")
        return cls(exported(model_path), variant, threads)

    def _feeds(self, texts: list[str]) -> dict[str, np.ndarray]:
        enc = self.tokenizer.encode_batch([safe_text(t) for t in texts])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.zeros_like(ids),
        }
        return {k: feeds[k] for k in self.inputs}

    def encode_one(self, text: str) -> np.ndarray:
        """The unit vector of `text` from a run of its own (no padding, no batch-mates): (dim,) float32."""
        return np.asarray(self.session.run(None, self._feeds([text]))[0][0], dtype=np.float32)

    def encode_each(self, texts: Sequence[str], workers: int = 1) -> np.ndarray:
        """Unit vectors for `texts`, one run per text, `workers` runs at a time (ONNX Runtime releases
        the GIL while it runs). Each row equals `encode_one` of its text bit for bit, whatever the batch."""
        out = np.zeros((len(texts), self.dim), np.float32)
        if workers <= 1 or len(texts) <= 1:
            for i, text in enumerate(texts):
                out[i] = self.encode_one(text)
            return out
        with ThreadPoolExecutor(min(workers, len(texts)), thread_name_prefix="encode-query") as pool:
            for i, vec in enumerate(pool.map(self.encode_one, texts)):
                out[i] = vec
        return out

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, on_batch: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors for `texts`; batches group texts of similar length (less padding). A row depends
        slightly on its batch-mates (see the module notes; `encode_each` does not).
        `on_batch(n)` is called after each batch of `n` texts (progress)."""
        out = np.zeros((len(texts), self.dim), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = self.session.run(None, self._feeds([texts[i] for i in rows]))[0]
            if on_batch is not None:
                on_batch(len(rows))
        return out
