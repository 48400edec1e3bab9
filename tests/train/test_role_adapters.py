"""One base, one LoRA adapter per role (`workbench.train.lora.RoleAdapters`): each role's policy generates with its own
adapter and leaves the training state as it found it, and a real TRL step on one role's adapter leaves the
other role's tensors (and the base) bit-identical."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
import torch

from workbench.errors import ConfigError
from workbench.train.lora import RoleAdapters
from workbench.trajectory import Task

DOCS = [
    {"title": "Paris", "text": "Paris is the capital of France."},
    {"title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"title": "Rome", "text": "Rome is the capital of Italy."},
]


class KeywordRetriever:
    def search(self, query: str, top_k: int = 3) -> list[dict]:
        words = set(query.lower().split())
        return sorted(DOCS, key=lambda d: -len(words & set(d["text"].lower().split())))[:top_k]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from workbench.models.tiny import build_tiny_model

    texts = [f"{d['title']}: {d['text']}" for d in DOCS] * 4 + ["<search> capital </search> <answer> Paris </answer>"]
    return build_tiny_model(
        tmp_path_factory.mktemp("tiny") / "model", texts, vocab_size=320, n_layer=2, n_embd=32, n_head=2, seed=0
    )


@pytest.fixture()
def adapters(tiny_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapters = RoleAdapters(AutoModelForCausalLM.from_pretrained(tiny_dir), ("solver", "proposer"), rank=4)
    return adapters, AutoTokenizer.from_pretrained(tiny_dir)


def base_tensors(adapters: RoleAdapters) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in adapters.model.named_parameters() if "lora_" not in n}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_activate_makes_one_role_trainable_and_bad_roles_are_refused(adapters):
    adapters, _ = adapters
    adapters.activate("proposer")
    trainable = {n for n, p in adapters.model.named_parameters() if p.requires_grad}
    assert trainable and trainable == set(adapters.tensors("proposer"))
    with pytest.raises(ConfigError, match="solver, proposer"):
        adapters.activate("judge")
    with pytest.raises(ConfigError, match="sft_lora_r"):
        RoleAdapters(adapters.model, ("solver",), rank=0)


def test_each_policy_generates_with_its_adapter_and_restores_the_training_state(adapters):
    from workbench.policies.base import SamplingParams

    adapters, tok = adapters
    with torch.no_grad():  # a trained proposer: its adapter no longer the identity
        for name, p in adapters.model.named_parameters():
            if ".proposer." in name and "lora_B" in name:
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name))))
    adapters.activate("proposer")  # as during the proposer's HRPO step
    flags = {n: p.requires_grad for n, p in adapters.model.named_parameters()}
    prompt = tok("Paris is the capital of")["input_ids"]
    greedy = SamplingParams(max_new_tokens=6, temperature=0.0)

    def logprobs(role: str) -> list[float]:
        [out] = asyncio.run(adapters.policy(role, tok).generate([prompt], greedy))
        return out.raw_logprobs

    solver, proposer = logprobs("solver"), logprobs("proposer")
    assert solver != proposer
    assert adapters.model.active_adapter == "proposer"
    assert flags == {n: p.requires_grad for n, p in adapters.model.named_parameters()}
    assert logprobs("solver") == solver  # same weights, same greedy tokens


def spread_reward(traj) -> dict[str, float]:
    """Rewards that differ between rollouts: the share of distinct tokens in the first turn."""
    ids = traj.steps[0].completion_ids if traj.steps else []
    return {"total": len(set(ids)) / max(len(ids), 1)}


@pytest.mark.slow
@pytest.mark.parametrize("role", ["proposer", "solver"])
def test_a_real_step_on_one_role_leaves_the_other_role_and_the_base_bit_identical(adapters, role, tmp_path):
    from workbench.train import TrainConfig
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.run import train

    adapters, tok = adapters
    other = "solver" if role == "proposer" else "proposer"
    adapters.activate(other)  # the last role to train was the other one
    tasks = [Task(f"t{i}", f"What is the capital of {c}?", [a]) for i, (c, a) in enumerate([("France", "Paris")] * 4)]
    config = TrainConfig(
        output_dir=str(tmp_path / role),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        learning_rate=1e-2,
        max_completion_length=96,
        seed=0,
    )
    episodes = SearchR1Episodes(KeywordRetriever(), max_turns=2, max_turn_tokens=16, max_total_tokens=96)
    base, mine, theirs = base_tensors(adapters), adapters.tensors(role), adapters.tensors(other)

    def inner(req):
        return train(config, tasks=tasks, episodes=episodes, model=adapters.model, tokenizer=tok, reward=spread_reward)

    summary = adapters.train_fn(inner)(SimpleNamespace(role=role))
    assert summary is not None and summary["global_step"] == 1
    assert same(adapters.tensors(other), theirs) and same(base_tensors(adapters), base)
    assert not same(adapters.tensors(role), mine)


def test_a_saved_adapter_loads_back_into_its_role(adapters, tmp_path):
    adapters, _ = adapters
    with torch.no_grad():
        for name, p in adapters.model.named_parameters():
            if ".solver." in name:
                p.add_(1.0)
    saved = adapters.tensors("solver")
    adapters.save("solver", tmp_path / "a")
    with torch.no_grad():
        for name, p in adapters.model.named_parameters():
            if ".solver." in name:
                p.zero_()
    proposer = adapters.tensors("proposer")
    adapters.load("solver", tmp_path / "a")
    assert same(adapters.tensors("solver"), saved) and same(adapters.tensors("proposer"), proposer)
