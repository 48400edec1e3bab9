"""A `TrainConfig(harness=...)`'s episodes: the gateway samples every call as the training config says whatever
the harness asks (both recorded, and the policy really gets the config's), and a rollout that forked into
several segments trains as several rows sharing its advantage."""

from __future__ import annotations

import asyncio

import pytest
from gateway_helpers import echo_policy
from harness_agents import ASKED

from workbench.train.config import TrainConfig
from workbench.train.run import build_episodes
from workbench.trajectory import Task

TASKS = [Task("a", "2+2?", golden_answers=["4"]), Task("b", "3+3?", golden_answers=["6"])]


class Recording:
    """A policy over `inner` that keeps the `SamplingParams` of every generate call."""

    def __init__(self, inner) -> None:
        self.inner, self.params = inner, []
        self.name, self.codec, self.context_size = inner.name, inner.codec, inner.context_size

    def describe(self):
        return self.inner.describe()

    async def generate(self, prompts, params):
        self.params.append(params)
        return await self.inner.generate(prompts, params)


def test_the_training_config_sets_every_call_s_sampling_whatever_the_harness_asks(chatml_codec):
    config = TrainConfig(harness="harness_agents:agent", temperature=0.7, max_turn_tokens=9, concurrency=2)
    runner, policy = build_episodes(config), Recording(echo_policy(chatml_codec))
    try:
        trajs = asyncio.run(runner(TASKS, policy))
    finally:
        runner.close()
    assert runner.concurrency == 2 and [t.termination for t in trajs] == ["submitted", "submitted"]
    records = [c for t in trajs for c in t.metadata["gateway"]["calls"]]
    assert len(records) == 4
    for record in records:
        assert record["sampling_requested"] == {**ASKED, "stop": [], "seed": None}
        assert record["sampling_applied"] == {
            "temperature": 0.7,
            "top_p": 1.0,
            "max_tokens": 9,
            "stop": [],
            "seed": None,
        }
    assert [(p.temperature, p.top_p, p.max_new_tokens) for p in policy.params] == [(0.7, 1.0, 9)] * 4


async def forking_agent(r) -> str:
    """Two calls; with `fork` in the task's metadata the second re-sends an edited first message (a new segment)."""
    first_user = {"role": "user", "content": r.task.question}
    first = await r.client.chat.completions.create(model="m", messages=[first_user])
    if r.task.metadata.get("fork"):
        first_user = {"role": "user", "content": r.task.question + " (edited)"}
    again = [first_user, first.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "More."}]
    second = await r.client.chat.completions.create(model="m", messages=again)
    return second.choices[0].message.content or ""


def test_a_forked_rollout_trains_as_several_rows_sharing_its_advantage(chatml_codec):
    """grpo over a group of two rollouts of one question, rewards (1, 0): the forked one (two segments) gives two
    rows, both carrying its +0.707; the other one row with -0.707."""
    from workbench.gateway import HarnessEpisodes
    from workbench.train.estimators import Batch
    from workbench.train.rollout import trajectory_samples
    from workbench.train.trainer import row_advantages

    tasks = [Task("q", "2+2?", metadata={"fork": True}), Task("q", "2+2?")]
    runner = HarnessEpisodes(forking_agent)
    try:
        forked, straight = asyncio.run(runner(tasks, echo_policy(chatml_codec)))
    finally:
        runner.close()
    assert forked.metadata["gateway"]["forks"] == {"history_edited": 1} and forked.metadata["gateway"]["segments"] == 2
    assert straight.metadata["gateway"]["segments"] == 1
    forked.rewards, straight.rewards = {"total": 1.0}, {"total": 0.0}

    eos = chatml_codec.eos_token_id
    samples, owner = [], []
    for i, traj in enumerate((forked, straight)):
        for sample in trajectory_samples(traj, eos, 256, "all"):
            samples.append(sample)
            owner.append(i)
    assert owner == [0, 0, 1]
    assert [s["prompt_ids"] for s in samples[:2]] == [forked.steps[0].prompt_ids, forked.steps[1].prompt_ids]
    config = TrainConfig(num_generations=2, per_device_train_batch_size=2)
    width = max(len(s["completion_ids"]) for s in samples)
    rows = row_advantages(
        config.make_estimator(), Batch([forked, straight], 2, config.epsilon), 0, owner,
        [s["step_index"] for s in samples], width,
    )  # fmt: skip
    # grpo's advantage is one value per row: the forked rollout's two rows share it (.5 / (std .707107 + 1e-4))
    assert rows.values.tolist() == pytest.approx([0.707007, 0.707007, -0.707007], abs=1e-5)
    for sample in samples:  # each row trains on exactly the ids the model sampled
        assert sum(sample["env_mask"]) == sum(1 for k in sample["step_index"] if k >= 0) > 0
