"""Faults and bad input: bodies over the limit (413), lone surrogates and invalid UTF-8, a retried
request (one recorded call, the first reply replayed), a harness that never finishes, and 64
concurrent rollouts x 20 interleaved calls with no call recorded under the wrong rollout."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import openai
import pytest
from gateway_helpers import create, echo_policy, eventually

from workbench.gateway import GatewayConfig, ModelGateway
from workbench.policies import ScriptedPolicy

USER = [{"role": "user", "content": "hi"}]


def _post(r, body: bytes, **headers) -> httpx.Response:
    headers = {"authorization": f"Bearer {r.api_key}", "content-type": "application/json", **headers}
    return httpx.post(f"{r.base_url}/chat/completions", content=body, headers=headers, timeout=30)


def test_a_body_over_the_limit_is_413_and_the_default_is_64_mib(chatml_codec):
    assert GatewayConfig().max_body_bytes >= 64 << 20
    config = GatewayConfig(max_body_bytes=64 << 10)
    with ModelGateway(echo_policy(chatml_codec), config=config) as gw, gw.rollout("q") as r:
        big = [{"role": "user", "content": "x" * (100 << 10)}]
        with pytest.raises(openai.APIStatusError) as err:
            create(r.base_url, r.api_key, model="m", messages=big)
        assert err.value.status_code == 413 and "limit is 65536 bytes" in err.value.message
        assert r.sync_client.chat.completions.create(model="m", messages=USER).choices[0].message.content
        assert len(r.trajectory.steps) == 1  # the refused call recorded nothing; the next one went through


def test_lone_surrogates_and_invalid_utf8_become_replacement_characters(gateway):
    with gateway.rollout("q") as r:
        escaped = b'{"model": "m", "messages": [{"role": "user", "content": "a \\ud800 b"}]}'
        raw = b'{"model": "m", "messages": [{"role": "user", "content": "caf\xc3\xa9 \xff"}]}'
        for body in (escaped, raw):
            reply = _post(r, body)
            assert reply.status_code == 200, reply.text
        ids = [s.prompt_ids for s in r.trajectory.steps]
        text = gateway.policy.codec.decode(ids[0]) + gateway.policy.codec.decode(ids[1])
        assert "a \ufffd b" in text and "café \ufffd" in text
        assert _post(r, b'{"messages": [1, 2]}').status_code == 400
        assert _post(r, b"[" * 100_000).json()["error"]["message"].startswith("the JSON body")


class Slow(ScriptedPolicy):
    async def generate(self, prompts, params):
        await asyncio.sleep(1.0)
        return await super().generate(prompts, params)


def test_a_retried_request_is_one_call_and_gets_the_first_reply(chatml_codec):
    with ModelGateway(Slow(lambda _c, t: f"turn {t}", codec=chatml_codec)) as gw, gw.rollout("q") as r:
        client = openai.OpenAI(base_url=r.base_url, api_key=r.api_key, timeout=0.4, max_retries=2)
        reply = client.chat.completions.create(model="m", messages=USER, timeout=httpx.Timeout(0.4))
        assert reply.choices[0].message.content == "turn 0"
        traj = r.trajectory
        assert len(traj.steps) == 1 and len(traj.metadata["gateway"]["calls"]) == 1
        assert eventually(lambda: r.trajectory.metadata["gateway"]["calls"][0]["delivered"])
        body = json.dumps({"model": "m", "messages": USER}).encode()
        first = _post(r, body).json()
        again = _post(r, body, **{"x-stainless-retry-count": "1"}).json()
        assert again == first and len(r.trajectory.steps) == 2  # replayed, not sampled again
        client.close()


def test_a_harness_that_never_finishes_ends_as_error_at_its_limit(chatml_codec):
    config = GatewayConfig(rollout_limit_s=0.5)
    with ModelGateway(echo_policy(chatml_codec), config=config) as gw:
        r = gw.rollout("q")
        r.sync_client.chat.completions.create(model="m", messages=USER)
        traj = eventually(lambda: r.trajectory if r.status == "error" else None)
        assert traj.termination == "error" and "rollout limit (0.5 s)" in traj.error
        assert len(traj.steps) == 1  # what it recorded is kept
        with pytest.raises(openai.NotFoundError, match="ran past its limit"):
            create(r.base_url, r.api_key, model="m", messages=USER)


@pytest.mark.slow
def test_64_concurrent_rollouts_of_20_interleaved_calls_record_none_under_the_wrong_rollout(chatml_codec, tmp_path):
    from workbench.store import Store

    async def harness(r, k: int) -> None:
        messages = [{"role": "user", "content": f"rollout {k} starts"}]
        async with openai.AsyncOpenAI(base_url=r.base_url, api_key=r.api_key) as client:
            for turn in range(20):
                reply = await client.chat.completions.create(model=f"m{k}", messages=messages)
                messages += [reply.choices[0].message.model_dump(exclude_none=True)]
                messages += [{"role": "user", "content": f"rollout {k} turn {turn}"}]
                await asyncio.sleep(0)

    async def play(gw) -> list:
        rollouts = [gw.rollout(f"task {k}") for k in range(64)]
        await asyncio.gather(*(harness(r, k) for k, r in enumerate(rollouts)))
        return [r.finish(str(k)) for k, r in enumerate(rollouts)]

    start = time.monotonic()
    with Store(tmp_path / "run") as store, ModelGateway(echo_policy(chatml_codec), store=store) as gw:
        trajs = asyncio.run(play(gw))
        for k, traj in enumerate(trajs):
            stored = store.get(traj.id)
            assert len(stored.steps) == 20 and len(stored.segments()) == 1, k
            text = chatml_codec.decode(stored.segments()[0]["prompt_ids"] + stored.segments()[0]["completion_ids"])
            assert text.count("rollout ") == text.count(f"rollout {k} ") == 20
            assert {c["model"] for c in stored.metadata["gateway"]["calls"]} == {f"m{k}"}
    assert time.monotonic() - start < 600


def test_a_client_that_leaves_mid_stream_keeps_the_call_not_delivered(chatml_codec):
    from workbench.policies import ByteCodec

    policy = ScriptedPolicy(lambda _c, _t: "word " * 600_000, codec=ByteCodec())
    with ModelGateway(policy) as gw, gw.rollout("q") as r:
        body = {"model": "m", "messages": USER, "stream": True, "max_tokens": 4_000_000}
        headers = {"authorization": f"Bearer {r.api_key}"}
        with httpx.Client(timeout=30) as client:
            with client.stream("POST", f"{r.base_url}/chat/completions", json=body, headers=headers) as response:
                first = next(response.iter_lines())
                assert first.startswith("data: ")
        time.sleep(0.5)
        traj = r.trajectory
        assert len(traj.steps) == 1 and len(traj.steps[0].completion_ids) > 2_900_000  # the call is kept
        assert traj.metadata["gateway"]["calls"][0]["delivered"] is False
        assert r.sync_client.chat.completions.create(model="m", messages=USER).choices  # the rollout goes on
