"""LoRA with vLLM rollouts: after each optimizer step TRL merges the adapter into the base weights,
loads the merged weights into the shared colocated engine, and unmerges (vLLM never holds an adapter)."""

from __future__ import annotations

import pytest
from train_helpers import KeywordRetriever

from workbench.trajectory import Task

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SEQUENCE = "Paris is the capital of France. <answer> Paris </answer>"


def spread(traj) -> dict[str, float]:
    ids = [i for s in traj.steps for i in s.completion_ids]
    return {"total": len(set(ids)) / max(len(ids), 1)}


def test_lora_weights_reach_vllm_merged_after_each_step(vllm_model_dir, vllm_engine, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.policies.vllm_colocated import load_model_weights, model_sequence_logprobs, sequence_logprobs
    from workbench.train.config import TrainConfig
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.run import train

    model = AutoModelForCausalLM.from_pretrained(vllm_model_dir)
    tok = AutoTokenizer.from_pretrained(vllm_model_dir)
    seq = tok.encode(SEQUENCE)
    before = sequence_logprobs(vllm_engine, seq)
    caps = [("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid")]
    tasks = [Task(id=f"c{i}", question=f"Capital of {c}?", golden_answers=[a]) for i, (c, a) in enumerate(caps)]
    episodes = SearchR1Episodes(KeywordRetriever(), max_turns=2, max_turn_tokens=12, top_k=1, max_total_tokens=64)
    cfg = TrainConfig(
        output_dir=str(tmp_path / "run"),
        use_vllm=True,
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        max_turns=2,
        max_turn_tokens=12,
        max_completion_length=64,
        learning_rate=5e-2,
        lora_r=4,
        lora_alpha=8,
    )
    try:
        train(cfg, tasks=tasks, episodes=episodes, model=model, tokenizer=tok, reward=spread)
        after = sequence_logprobs(vllm_engine, seq)
        trained = model_sequence_logprobs(model, seq)  # peft injected the adapter into `model` in place
        assert max(abs(a - b) for a, b in zip(after, trained, strict=True)) < 1e-3
        assert max(abs(a - b) for a, b in zip(after, before, strict=True)) > 1e-3
    finally:
        load_model_weights(vllm_engine, AutoModelForCausalLM.from_pretrained(vllm_model_dir))
