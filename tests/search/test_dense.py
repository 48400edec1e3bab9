import copy

import numpy as np
import pytest

from workbench.errors import ConfigError, RetrievalError
from workbench.search import DenseRetriever, Encoder, load_index
from workbench.search.dense import build_faiss_index


def test_dense_recall_at_3_on_one_hop_questions(dense, world, recall_at):
    _, questions = world
    assert recall_at(dense, questions, 3) >= 0.9


def test_hits_are_ranked_rows_with_scores(dense):
    hits = dense.search("Who founded the city?", top_k=5)
    assert len(hits) == 5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(-1.0001 <= h.score <= 1.0001 for h in hits)
    assert dense.retrieve([], top_k=3) == []
    with pytest.raises(ConfigError, match="search"):
        dense.retrieve("a bare string")


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip_gives_identical_results(dense, world, tmp_path, mmap):
    queries = [q["question"] for q in world[1][:25]]
    before = dense.retrieve(queries, top_k=3)
    dense.save(tmp_path / "idx")
    loaded = load_index(tmp_path / "idx", mmap=mmap, encoder=dense.encoder)
    assert isinstance(loaded, DenseRetriever)
    after = loaded.retrieve(queries, top_k=3)
    assert [[h.id for h in r] for r in before] == [[h.id for h in r] for r in after]
    assert [[h.score for h in r] for r in before] == [[h.score for h in r] for r in after]


def test_load_rebuilds_encoder_from_meta(dense, tmp_path):
    dense.save(tmp_path / "idx", copy_corpus=True)
    loaded = DenseRetriever.load(tmp_path / "idx")
    assert loaded.encoder.name == "default"
    assert loaded.search("x")[0].id == dense.search("x")[0].id


def test_e5_prefixes(encoder):
    e5 = copy.copy(encoder)  # same model, prefixes on (as Encoder(path, e5=True) would be)
    e5.e5 = True
    got = e5.encode_passages(["who built it"])
    want = encoder.model.encode(["passage: who built it"], normalize_embeddings=True)
    assert np.allclose(got, want, atol=1e-5)
    q = e5.encode_queries(["who built it"])  # int8 by default: close to the prefixed query, not the bare one
    prefixed, bare = (
        encoder.model.encode([t], normalize_embeddings=True) for t in ("query: who built it", "who built it")
    )
    assert (q @ prefixed.T).item() > 0.97 and (q @ prefixed.T).item() > (q @ bare.T).item()
    assert not encoder.e5
    from workbench.search.encoder import is_e5

    assert is_e5("/models/e5-base-v2") and not is_e5("/models/all-MiniLM-L6-v2")


def test_missing_encoder_path_is_a_config_error():
    with pytest.raises(ConfigError, match="local directory"):
        Encoder("intfloat/e5-base-v2")


@pytest.mark.parametrize("kind", ["ivf", "hnsw", "Flat"])
def test_index_types_find_exact_neighbours(world, kind):
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((len(world[0]), 32)).astype("float32")
    r = DenseRetriever.from_vectors(world[0], vecs, index=kind)
    q = vecs[:20] / np.linalg.norm(vecs[:20], axis=1, keepdims=True)
    top1 = [hits[0].id for hits in r.search_vectors(q, top_k=1)]
    assert sum(t == str(i) for i, t in enumerate(top1)) >= 18
    with pytest.raises(RetrievalError, match="encoder"):
        r.search("text needs an encoder")


def test_bad_index_spec_and_gpu_request_without_gpu(world):
    import faiss

    vecs = np.eye(4, dtype="float32")
    with pytest.raises(ConfigError, match="index_factory"):
        build_faiss_index(vecs, "NotAnIndex")
    if faiss.get_num_gpus() == 0:
        with pytest.raises(RetrievalError, match="faiss-gpu"):
            DenseRetriever.from_vectors(world[0], np.ones((len(world[0]), 4)), gpu=True)


def test_index_corpus_mismatch_is_reported(world):
    from workbench.search import Corpus

    r = DenseRetriever.from_vectors(world[0], np.ones((len(world[0]), 4)))
    with pytest.raises(RetrievalError, match="rebuild"):
        DenseRetriever(Corpus.from_rows([{"contents": "x"}]), None, r.cpu_index)
