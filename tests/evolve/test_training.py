"""Slow: one self-evolution iteration where a tiny local model (the solver) gets a real GRPO step."""

from __future__ import annotations

import os

import pytest
import torch

from workbench.evolve import DrZeroConfig, load_qa, run_drzero, trl_train_fn, world_proposer

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny(world, tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.models.tiny import build_tiny_model, sample_texts
    from workbench.worlds import split_title

    texts = [split_title(p["contents"])[1] for p in world.corpus()] + sample_texts(50)
    path = build_tiny_model(tmp_path_factory.mktemp("tiny"), texts, vocab_size=600, n_embd=32, seed=0)
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def spread_reward(traj) -> dict[str, float]:
    """Differs between rollouts (a random tiny model never answers right, so EM would give zero
    advantages): a hash of the first turn's tokens in [0, 1), plus the exact match."""
    ids = traj.steps[0].completion_ids if traj.steps else []
    em = float(traj.final_answer in traj.task.golden_answers)
    return {"total": sum(ids) % 97 / 97 + em, "exact_match": em}


def test_tiny_solver_gets_one_real_grpo_step(tmp_path, retriever, tiny, counting_store):
    from workbench.policies import TransformersPolicy
    from workbench.train import TrainConfig

    model, tok = tiny
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    solver_agent = {"max_steps": 1, "max_new_tokens": 16, "max_context_tokens": 1800}
    cfg = DrZeroConfig(
        run_dir=str(tmp_path / "dz"),
        prompts_per_iteration=3,
        samples_per_prompt=1,
        solver_attempts=2,
        solver_group_size=2,
        concurrency=2,
        hop_weights={1: 1.0},
        progress=False,
        solver_agent=solver_agent,
        proposer_agent={"max_steps": 4, "max_context_tokens": 16384},
    )
    train_cfg = TrainConfig(
        max_steps=1,
        num_generations=2,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        max_completion_length=64,
        max_turns=1,
        max_turn_tokens=16,
        concurrency=2,
    )
    store = counting_store(tmp_path / "dz")
    result = run_drzero(
        cfg,
        proposer_policy=world_proposer(),
        solver_policy=TransformersPolicy.from_model(model, tok),
        retriever=retriever,
        store=store,
        train_fn=trl_train_fn(train_cfg, solver=(model, tok), rewards={"solver": spread_reward}),
    )
    [it] = result.iterations
    assert it.qa_size == 3 and len(load_qa(it.qa_path)) == 3
    summary = it.training["solver"]
    assert summary["global_step"] == 1 and summary["estimator"] == "grpo"
    assert it.training["proposer"] is None  # the scripted proposer has no model to train
    assert os.path.isdir(summary["final_dir"]) and summary["final_dir"].startswith(str(tmp_path / "dz" / "iter_0"))
    assert any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    # the update's rollouts are solver episodes on the QA set, in the store
    solvers = result.store.query(role="solver")
    assert len(solvers) >= 3 * 2 + 2
    # each written once: the update's episodes by the trainer, scored with its reward
    assert set(store.writes.values()) == {1} and len(store.writes) == len(result.store.query())
    update = [t for t in store.iter_trajectories(role="solver") if t.lineage.get("phase") == "solver_update"]
    assert len(update) >= 2 and all(t.reward_spec == "spread_reward" for t in update)
    store.close()
