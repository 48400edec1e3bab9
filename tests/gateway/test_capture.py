"""Capture: every call is a Step of its rollout's trajectory, written before the reply, with what
training needs (prompt ids, sampled ids, logprobs raw and processed, the policy version) and what
the call was (sampling asked and applied, latency, finish reason, delivered, auxiliary)."""

from __future__ import annotations

import httpx
import openai
import pytest
from gateway_helpers import eventually

from workbench.gateway import AUXILIARY_HEADER, GatewayConfig, ModelGateway, TrainingSampling
from workbench.policies import ScriptedPolicy

USER = [{"role": "user", "content": "Name a colour."}]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from workbench.models import build_tiny_model, sample_texts

    return build_tiny_model(tmp_path_factory.mktemp("tiny"), sample_texts(), vocab_size=400, seed=0)


def test_a_real_models_call_keeps_its_ids_and_both_logprobs(tiny_model, tmp_path):
    from workbench.policies import TransformersPolicy
    from workbench.store import Store

    policy = TransformersPolicy(tiny_model)
    with Store(tmp_path / "run") as store, ModelGateway(policy, store=store) as gw, gw.rollout("q") as r:
        reply = r.sync_client.chat.completions.create(
            model="tiny", messages=USER, max_tokens=12, temperature=0.7, seed=3, logprobs=True
        )
        [step] = gw.call_log.steps(r.id)
        assert step.prompt_ids == policy.codec.chat(USER)  # the template's rendering, ids as the codec makes them
        assert 0 < len(step.completion_ids) <= 12
        assert len(step.logprobs or []) == len(step.completion_ids) == len(step.raw_logprobs or [])
        assert [t.logprob for t in reply.choices[0].logprobs.content] == pytest.approx(step.logprobs)
        call = gw.call_log.rows(r.id)[0]["record"]
        assert call["sampling_applied"]["temperature"] == 0.7 and call["sampling_applied"]["max_tokens"] == 12
        assert call["finish_reason"] == step.finish_reason and call["latency_s"] > 0
        assert reply.usage.prompt_tokens == len(step.prompt_ids)
        assert gw.trajectory(r.id).lineage["policy"] == policy.describe()  # what sampled, as NB-Agent records it


class Versioned(ScriptedPolicy):
    """A scripted policy whose weights are at version 7 (as a trainer stamps them)."""

    async def generate(self, prompts, params):
        outs = await super().generate(prompts, params)
        for out in outs:
            out.policy_version = 7
        return outs


def test_training_sets_the_sampling_and_records_both(chatml_codec):
    config = GatewayConfig(training=TrainingSampling(temperature=1.0, top_p=0.9, max_tokens=5))
    policy = Versioned(lambda _c, _t: "a long answer that runs past five tokens", codec=chatml_codec)
    with ModelGateway(policy, config=config) as gw, gw.rollout("q") as r:
        reply = r.sync_client.chat.completions.create(model="m", messages=USER, temperature=0.0, max_tokens=100)
        assert reply.choices[0].finish_reason == "length"
        traj = r.trajectory
        call = traj.metadata["gateway"]["calls"][0]
        assert call["sampling_requested"]["temperature"] == 0.0 and call["sampling_requested"]["max_tokens"] == 100
        assert call["sampling_applied"] == {
            **call["sampling_requested"],
            "temperature": 1.0,
            "top_p": 0.9,
            "max_tokens": 5,
        }
        assert len(traj.steps[0].completion_ids) == 5
        assert traj.steps[0].policy_version == 7 and call["policy_version"] == 7
        with pytest.raises(openai.BadRequestError, match=r"^Error code: 400 - n: n > 1 is refused in training"):
            r.sync_client.chat.completions.create(model="m", messages=USER, n=2)


def test_an_auxiliary_call_is_recorded_but_never_a_step(gateway):
    with gateway.rollout("q") as r:
        r.sync_client.chat.completions.create(model="m", messages=USER)
        r.sync_client.chat.completions.create(model="title-model", messages=USER, extra_headers={AUXILIARY_HEADER: "1"})
        traj = r.trajectory
        assert len(traj.steps) == 1 and len(traj.segments()) == 1
        assert [row["step"] is None for row in gateway.call_log.rows(r.id)] == [False, True]
        aux = traj.metadata["gateway"]["calls"][1]
        assert aux["auxiliary"] is True and aux["step"] is None and aux["completion_ids"]
        assert aux["model"] == "title-model"


def test_a_call_is_stored_before_its_reply_and_delivered_after(gateway):
    with gateway.rollout("q") as r:
        seen = []

        def on_response(response: httpx.Response) -> None:
            seen.append(len(gateway.call_log.steps(r.id)))  # the call log already holds the call

        client = openai.OpenAI(
            base_url=r.base_url, api_key=r.api_key, http_client=httpx.Client(event_hooks={"response": [on_response]})
        )
        client.chat.completions.create(model="m", messages=USER)
        assert seen == [1]
        client.close()
    assert eventually(lambda: gateway.test_store.get(r.id).metadata["gateway"]["calls"][0]["delivered"])


def test_the_call_log_rebuilds_the_trajectory_and_the_store_gets_it_whole_at_the_end(gateway):
    with gateway.rollout("q") as r:
        messages = [{"role": "user", "content": "one"}]
        for turn in range(3):
            reply = r.sync_client.chat.completions.create(model="m", messages=messages)
            messages += [reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": f"{turn}"}]
        messages = [{"role": "user", "content": "a side call"}]  # a new segment
        r.sync_client.chat.completions.create(model="m", messages=messages)
        live = r.trajectory
        assert gateway.call_log.steps(r.id) == live.steps  # what a crash now would leave
        rebuilt = type(live)(task=live.task, steps=gateway.call_log.steps(r.id))
        assert rebuilt.segments() == live.segments() and len(live.segments()) == 2
    assert gateway.test_store.get(r.id).steps == live.steps
