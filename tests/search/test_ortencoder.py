"""The ONNX Runtime encoders (exported locally from the packaged MiniLM) against sentence-transformers."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.safetext import safe_text
from workbench.search import Encoder
from workbench.search.ortencoder import cache_dir


def torch_vectors(encoder, texts):
    return encoder.model.encode([safe_text(t) for t in texts], normalize_embeddings=True, convert_to_numpy=True)


def test_default_backends_are_onnx(encoder):
    assert (encoder.backend, encoder.query_backend) == ("onnx", "onnx-int8")
    assert encoder.describe()["query_backend"] == "onnx-int8"
    assert (encoder.onnx_dir / "model.onnx").is_file() and (encoder.onnx_dir / "model-int8.onnx").is_file()


def test_onnx_fp32_passages_equal_torch(encoder, world):
    texts = world[0].contents()[:40]
    assert np.allclose(encoder.encode_passages(texts), torch_vectors(encoder, texts), atol=2e-5)


def test_int8_queries_close_to_torch_and_same_recall(encoder, dense, world, recall_at):
    questions = world[1]
    qs = [q["question"] for q in questions]
    fast, ref = encoder.encode_queries(qs), torch_vectors(encoder, qs)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1, atol=1e-4)
    assert (fast * ref).sum(1).min() > 0.95

    def recall(vectors):
        hits = dense.search_vectors(vectors, 3)
        return np.mean([bool({h.id for h in hs} & set(q["support"])) for hs, q in zip(hits, questions, strict=True)])

    assert abs(recall(fast) - recall(ref)) <= 0.01
    assert recall(fast) == pytest.approx(recall_at(dense, questions, 3))


def test_torch_backend_is_sentence_transformers(encoder):
    t = Encoder(backend="torch", query_backend="torch")
    q = ["Who founded the festival?"]
    assert np.allclose(t.encode_queries(q), torch_vectors(encoder, q), atol=1e-6)
    assert t.describe()["backend"] == "torch"


def test_bad_backend_names_the_choices():
    with pytest.raises(ConfigError, match="onnx-int8"):
        Encoder(query_backend="openvino")


def test_export_is_cached_and_reused(encoder):
    stamp = (encoder.onnx_dir / "encoder.json").stat().st_mtime_ns
    again = Encoder()
    assert again.onnx_dir == encoder.onnx_dir == cache_dir(encoder.path)
    assert (again.onnx_dir / "encoder.json").stat().st_mtime_ns == stamp
    info = json.loads((again.onnx_dir / "encoder.json").read_text())
    assert info["dim"] == 384 and info["pooling"] == "mean" and info["max_length"] == 256


@pytest.mark.slow
def test_export_from_scratch_offline_in_a_fresh_process(encoder, tmp_path):
    """A copy of the model exports in a process with no network namespace at all (bwrap) to the same vectors."""
    model = tmp_path / "model"
    model.mkdir()
    for f in encoder.path.iterdir():
        if f.name != "onnx-workbench":
            (model / f.name).symlink_to(f)
    code = (
        "import sys; from pathlib import Path; from workbench.search.ortencoder import export; "
        "export(Path(sys.argv[1]), Path(sys.argv[2]))"
    )
    bwrap = ["bwrap", "--unshare-net", "--dev-bind", "/", "/", "--"]
    subprocess.run(
        [*bwrap, sys.executable, "-c", code, str(model), str(tmp_path / "exp")],
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "0"},
        capture_output=True,
        timeout=900,
    )
    from workbench.search.ortencoder import OrtModel

    texts = ["Who founded the river Kel?", "a"]
    got = OrtModel(tmp_path / "exp", "onnx", 1).encode(texts)
    assert np.allclose(got, encoder.encode_passages(texts), atol=1e-5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=300))
def test_any_text_encodes_to_a_unit_vector_like_torch(encoder, text):
    q = encoder.encode_queries([text])
    p = encoder.encode_passages([text])
    assert q.shape == p.shape == (1, 384) and np.isfinite(q).all() and np.isfinite(p).all()
    assert abs(np.linalg.norm(q) - 1) < 1e-4
    assert np.allclose(p, torch_vectors(encoder, [text]), atol=5e-5)


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_progress_callback_counts_every_passage_and_changes_nothing(world, backend):
    enc = Encoder(backend=backend, batch_size=8)
    texts = world[0].contents()[:30]
    seen = []
    got = enc.encode_passages(texts, on_batch=seen.append)
    assert sum(seen) == 30 and np.array_equal(got, enc.encode_passages(texts))
    if backend == "onnx":  # one call a batch of 8: 8 + 8 + 8 + 6
        assert sorted(seen) == [6, 8, 8, 8]
