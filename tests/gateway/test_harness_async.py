"""Asynchronous rollouts of a harness: each call carries the policy version that sampled it, including the calls
in flight while the trainer publishes new weights, and a real overlapped GRPO run trains on a harness."""

from __future__ import annotations

import asyncio
import threading

import pytest
from gateway_helpers import echo_policy

from workbench.gateway import HarnessEpisodes
from workbench.train.episode_producer import VersionedWeights
from workbench.trajectory import Task


class Held:
    """A policy over `inner` that notes when each generate starts and ends (by the prompt's question), and holds
    the first generate of the question `hold` until `release` is set."""

    def __init__(self, inner, hold: str) -> None:
        self.inner, self.hold, self.events = inner, hold, []
        self.name, self.codec, self.context_size = inner.name, inner.codec, inner.context_size
        self.started, self.release = threading.Event(), threading.Event()

    def describe(self):
        return self.inner.describe()

    async def generate(self, prompts, params):
        text = self.codec.decode(prompts[0])
        who = next(q for q in ("A?", "B?") if q in text)
        self.events.append(f"{who} start")
        if who == self.hold and not self.started.is_set():
            self.started.set()
            await asyncio.to_thread(self.release.wait, 30)
        outs = await self.inner.generate(prompts, params)
        self.events.append(f"{who} end")
        return outs


def test_a_call_in_flight_during_a_weight_update_keeps_its_version_and_later_calls_take_the_new_one(chatml_codec):
    """What happens to calls in flight when the trainer publishes weights (`VersionedWeights`, the overlapped
    trainer's gate): rollout A's first call is generating at version 0 when version 1 is published. That call
    finishes on the weights it started with and records version 0; the weights load only once no call is
    generating, so rollout B's first call, sent after the publish, waits for A's to end and records version 1,
    as does A's second call. A rollout may span versions: each call (and its Step) carries its own."""
    loaded: list[str] = []
    weights = VersionedWeights(loaded.append)
    held = Held(echo_policy(chatml_codec), hold="A?")
    published = threading.Event()

    async def agent(r) -> str:
        if r.task.id == "b":
            await asyncio.to_thread(published.wait, 30)  # B starts after the update was published
        messages = [{"role": "user", "content": r.task.question}]
        first = await r.client.chat.completions.create(model="m", messages=messages)
        messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "On."}]
        second = await r.client.chat.completions.create(model="m", messages=messages)
        return second.choices[0].message.content or ""

    def trainer() -> None:
        assert held.started.wait(30)  # A's first call is generating (version 0)
        weights.publish(1, "weights of step 1")
        published.set()
        assert not loaded  # not loaded under a generating call
        held.release.set()

    step = threading.Thread(target=trainer)
    step.start()
    runner = HarnessEpisodes(agent)
    try:
        a, b = asyncio.run(runner([Task("a", "A?"), Task("b", "B?")], weights.policy(held)))
    finally:
        runner.close()
        held.release.set()
        step.join()
    assert loaded == ["weights of step 1"] and weights.version == 1
    versions = {t.task.id: [c["policy_version"] for c in t.metadata["gateway"]["calls"]] for t in (a, b)}
    assert versions == {"a": [0, 1], "b": [1, 1]}
    for traj in (a, b):
        assert [s.policy_version for s in traj.steps] == versions[traj.task.id]
    assert held.events.index("B? start") > held.events.index("A? end")  # B's first call waited for A's


@pytest.mark.slow
def test_overlapped_grpo_trains_on_a_harness_with_each_call_s_version(tmp_path):
    """`TrainConfig(async_rollouts=True, max_staleness=1)`, episodes from `harness=`: two optimizer steps while the
    next wave plays (the waves share one gateway, each rollout sampling from its wave's policy); every rollout
    ends as submitted, and every call records the version that sampled it, the same as its Step's, never lower
    than an earlier call's of its rollout (before this was right, the second wave's start stopped the gateway
    under the first wave's rollouts)."""
    import torch
    from gateway_helpers import spread_reward
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.models import build_tiny_model, sample_texts
    from workbench.store import Store
    from workbench.train.config import TrainConfig
    from workbench.train.run import build_episodes
    from workbench.train.trainer import WorkbenchGRPOTrainer

    path = build_tiny_model(tmp_path / "tiny", sample_texts(), vocab_size=400, seed=0)
    torch.manual_seed(0)
    cfg = TrainConfig(
        output_dir=str(tmp_path / "run"), harness="harness_agents:agent", async_rollouts=True, max_staleness=1,
        num_generations=2, per_device_train_batch_size=4, max_steps=2, learning_rate=1e-2, max_turn_tokens=8,
        max_completion_length=96, device="cpu",
    )  # fmt: skip
    model, tok = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    tasks = [Task(f"t{i}", f"Question {i}?") for i in range(8)]
    runner = build_episodes(cfg)
    with Store(tmp_path / "store") as store:
        try:
            trainer = WorkbenchGRPOTrainer(
                model, tok, tasks, episodes=runner, config=cfg, reward=spread_reward, store=store
            )
            trainer.train()
        finally:
            runner.close()
        trajs = list(store.iter_trajectories())
    assert trainer.state.global_step == 2
    assert len(trajs) >= 8 and {t.role for t in trajs} == {"harness"}
    for traj in trajs:
        assert traj.termination == "submitted", traj.error
        calls = traj.metadata["gateway"]["calls"]
        assert len(calls) == 2 and all(isinstance(c["policy_version"], int) for c in calls)
        assert [c["policy_version"] for c in calls] == [s.policy_version for s in traj.steps]
        assert calls[0]["policy_version"] <= calls[1]["policy_version"] <= 2
    assert {c["policy_version"] for t in trajs for c in t.metadata["gateway"]["calls"]} >= {0}
