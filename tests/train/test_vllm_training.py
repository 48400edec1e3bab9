"""Training with vLLM generating the rollouts (TRL's colocate path on the installed vLLM: CPU build here).

The session's one engine (`vllm_engine`, tests/vllm_fixtures.py) is the colocated engine
(`vllm_colocated.colocated_llm`) every trainer on the session's tiny Qwen2 (`vllm_model_dir`, heads of
32: the CPU build's smallest) shares, so the trainers here find it instead of starting their own;
the tests train the model in place, in order, and load its saved weights back into the engine at the end.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from train_helpers import KeywordRetriever
from vllm_fixtures import RENDEZVOUS_AT_START, require_vllm

from workbench.trajectory import Task

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SEQUENCE = "Paris is the capital of France. <answer> Paris </answer>"


def spread(traj) -> dict[str, float]:
    """A reward with variance inside every group (share of distinct sampled ids), so weights move."""
    ids = [i for s in traj.steps for i in s.completion_ids]
    return {"total": len(set(ids)) / max(len(ids), 1)}


def capital_tasks() -> list[Task]:
    caps = [("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid")]
    return [
        Task(id=f"c{i}", question=f"What is the capital of {c}?", golden_answers=[a], metadata={"hops": 1})
        for i, (c, a) in enumerate(caps)
    ]


class Recording:
    """An episode runner that records which policy sampled each batch."""

    def __init__(self) -> None:
        from workbench.train.episodes import SearchR1Episodes

        self.inner = SearchR1Episodes(KeywordRetriever(), max_turns=2, max_turn_tokens=12, top_k=1, max_total_tokens=64)
        self.policies: list[dict] = []

    async def __call__(self, tasks, policy):
        self.policies.append(policy.describe())
        return await self.inner(tasks, policy)


def rows(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def model_and_engine(vllm_model_dir, vllm_engine):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.policies.vllm_colocated import load_model_weights

    model = AutoModelForCausalLM.from_pretrained(vllm_model_dir)
    tok = AutoTokenizer.from_pretrained(vllm_model_dir)
    yield model, tok, vllm_engine
    load_model_weights(vllm_engine, AutoModelForCausalLM.from_pretrained(vllm_model_dir))


def config(tmp_path: Path, name: str, **kw):
    from workbench.train.config import TrainConfig

    return TrainConfig(
        output_dir=str(tmp_path / name),
        use_vllm=True,
        num_generations=2,
        per_device_train_batch_size=4,
        max_turns=2,
        max_turn_tokens=12,
        max_completion_length=64,
        learning_rate=1e-2,
        **kw,
    )


def test_weights_reach_vllm_after_each_step_and_the_gap_is_logged(model_and_engine, tmp_path):
    from workbench.policies.vllm_colocated import model_sequence_logprobs, sequence_logprobs
    from workbench.train.run import train

    model, tok, llm = model_and_engine
    seq = tok.encode(SEQUENCE)
    before = sequence_logprobs(llm, seq)
    assert max(abs(a - b) for a, b in zip(before, model_sequence_logprobs(model, seq), strict=True)) < 1e-3

    runner = Recording()
    summary = train(
        config(tmp_path, "run", max_steps=2),
        tasks=capital_tasks(),
        episodes=runner,
        model=model,
        tokenizer=tok,
        reward=spread,
    )
    assert summary["global_step"] == 2
    assert runner.policies and all(p["backend"] == "vllm-colocate" for p in runner.policies)

    after = sequence_logprobs(llm, seq)
    trained = model_sequence_logprobs(model, seq)
    assert max(abs(a - b) for a, b in zip(after, trained, strict=True)) < 1e-3  # fp32 engine == trained model
    assert max(abs(a - b) for a, b in zip(after, before, strict=True)) > 1e-2  # and the step did change it

    steps = [r for r in rows(tmp_path / "run") if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:  # behaviour-vs-trainer gap over model tokens, every step
        assert 0.0 <= r["sampling/logp_gap/mean"] <= r["sampling/logp_gap/max"] < 1e-2
        assert "sampling/importance_sampling_ratio/mean" not in r  # correction off by default


def test_importance_sampling_correction_switches_on_and_shares_the_engine(model_and_engine, tmp_path):
    from workbench.policies import vllm_colocated
    from workbench.train.run import train

    model, tok, llm = model_and_engine
    cfg = config(
        tmp_path,
        "is",
        max_steps=1,
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_truncate",
    )
    assert cfg.to_grpo_config().vllm_importance_sampling_correction is True
    engines = list(vllm_colocated._ENGINES.values())
    assert any(e is llm for e in engines)
    train(cfg, tasks=capital_tasks(), episodes=Recording(), model=model, tokenizer=tok, reward=spread)
    [row] = [r for r in rows(tmp_path / "is") if "loss" in r]
    assert 0.9 < row["sampling/importance_sampling_ratio/mean"] < 1.1
    # TRL's own divergence metric and the workbench's gap measure the same thing
    assert row["sampling/sampling_logp_difference/mean"] == pytest.approx(row["sampling/logp_gap/mean"], abs=1e-6)
    assert list(vllm_colocated._ENGINES.values()) == engines  # the trainer shared the session's engine, built none


def test_asynchronous_rollouts_sample_from_the_engine_and_load_each_step_at_turn_boundaries(model_and_engine, tmp_path):
    """async_rollouts with use_vllm: the producer's episodes sample from the colocated engine, the
    weights reach it at turn boundaries (never by TRL's own sync mid-wave), staleness stays within k,
    nothing is dropped, and the loss corrects with the engine's behaviour logprobs."""
    from workbench.train.run import train

    model, tok, _ = model_and_engine
    runner = Recording()
    summary = train(
        config(tmp_path, "async", max_steps=3, async_rollouts=True, max_staleness=1, async_timeout_s=600.0),
        tasks=capital_tasks(),
        episodes=runner,
        model=model,
        tokenizer=tok,
        reward=spread,
    )
    assert summary["global_step"] == 3
    assert runner.policies and all(p["backend"] == "vllm-colocate" and p["versioned"] for p in runner.policies)
    steps = [r for r in rows(tmp_path / "async") if "loss" in r]
    assert len(steps) == 3
    assert all(r["async/staleness/max"] <= 1 and r["async/groups_dropped"] == 0 for r in steps)
    assert all(r["async/weight_sync_s"] > 0 for r in steps[1:])  # the engine loaded published weights
    assert all(r["async/mismatch_kl"] >= 0 and r["async/behaviour_weight/max"] > 0 for r in steps)


def test_cpu_attention_head_size_is_checked_with_the_fix():
    require_vllm()
    from transformers import Qwen2Config

    from workbench.errors import ConfigError
    from workbench.policies.vllm_colocated import check_model, on_cpu

    if not on_cpu():
        pytest.skip("the head-size limit is the CPU build's")
    with pytest.raises(ConfigError, match="n_embd=64"):
        check_model(Qwen2Config(hidden_size=32, num_attention_heads=2))
    check_model(Qwen2Config(hidden_size=64, num_attention_heads=2))


def test_the_engine_leaves_no_rendezvous_variables_behind(vllm_engine):
    """TRL's colocate group needs RANK/WORLD_SIZE/MASTER_PORT while the engine starts; left set, a
    subprocess started later (a bench, a launched run) rendezvoused on this process's port and died
    with EADDRINUSE. After start-up the process environment is as it was."""
    assert {n: os.environ.get(n) for n in RENDEZVOUS_AT_START} == RENDEZVOUS_AT_START
