"""Rollouts and endpoints through a real `openai` client on loopback: URLs, keys, 404/403/401, the
reply types, OpenAI-shaped errors, `/v1/completions`, `/v1/models`, the admin HTTP API."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import typing

import httpx
import openai
import pytest
from gateway_helpers import create, eventually
from openai.types.chat import ChatCompletion

from workbench.gateway.wire import ChatRequest

USER = [{"role": "user", "content": "What is 2+2?"}]


def test_a_rollout_serves_chat_completions_and_records_each_call(gateway):
    with gateway.rollout("What is 2+2?") as r:
        assert r.base_url == f"{gateway.url}/rollouts/{r.id}/v1"
        assert r.task.question == "What is 2+2?"
        reply = r.sync_client.chat.completions.create(model="whatever-name", messages=USER)
        assert isinstance(reply, ChatCompletion)
        assert reply.choices[0].message.content == "turn 0"
        assert reply.choices[0].finish_reason == "stop"
        assert reply.model == "whatever-name"
        assert reply.usage is not None and reply.usage.completion_tokens > 0
        logged = gateway.call_log.steps(r.id)  # durable before the reply came back
        assert len(logged) == 1 and logged[0].completion_ids
        call = gateway.call_log.rows(r.id)[0]["record"]
        assert call["model"] == "whatever-name" and call["endpoint"] == "chat.completions"
        r.finish("4")
    done = gateway.test_store.get(r.id)
    assert done.final_answer == "4" and done.termination == "submitted"
    assert eventually(lambda: gateway.test_store.get(r.id).metadata["gateway"]["calls"][0]["delivered"])


def test_the_async_client_works_too(gateway):
    async def play(r):
        reply = await r.client.chat.completions.create(model="m", messages=USER)
        return reply.choices[0].message.content

    with gateway.rollout({"question": "q", "golden_answers": ["4"]}) as r:
        assert asyncio.run(play(r)) == "turn 0"
        assert r.task.golden_answers == ["4"]


def test_unknown_or_finished_rollouts_are_404_and_other_keys_403(gateway):
    a, b = gateway.rollout("a"), gateway.rollout("b")
    with pytest.raises(openai.PermissionDeniedError):
        create(a.base_url, b.api_key, model="m", messages=USER)
    with pytest.raises(openai.NotFoundError):
        create(f"{gateway.url}/rollouts/nope/v1", a.api_key, model="m", messages=USER)
    a.finish("x")
    with pytest.raises(openai.NotFoundError, match="finished"):
        create(a.base_url, a.api_key, model="m", messages=USER)
    no_key = httpx.post(f"{b.base_url}/chat/completions", json={"messages": USER})
    assert no_key.status_code == 401 and no_key.json()["error"]["message"].startswith("no API key")
    assert len(gateway.trajectory(b.id).steps) == 0  # refused calls record nothing
    b.finish()


def test_errors_have_openais_shape_and_name_the_field(gateway):
    with gateway.rollout("q") as r:
        client = r.sync_client.with_options(max_retries=0)
        with pytest.raises(openai.BadRequestError, match="frobnicate") as err:
            client.chat.completions.create(model="m", messages=USER, extra_body={"frobnicate": 1})
        assert err.value.body["message"]  # the openai client parsed {"error": {...}}
        with pytest.raises(openai.BadRequestError, match=r"^Error code: 400 - n: n must be between 1 and 16"):
            client.chat.completions.create(model="m", messages=USER, n=17)
        with pytest.raises(openai.BadRequestError, match="stream"):
            client.chat.completions.create(model="m", messages=USER, n=2, stream=True)
        with pytest.raises(openai.BadRequestError, match="response_format"):
            client.chat.completions.create(model="m", messages=USER, response_format={"type": "json_object"})
        bad = httpx.post(
            f"{r.base_url}/chat/completions", content=b"{not json", headers={"authorization": f"Bearer {r.api_key}"}
        )
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]


def test_a_prompt_past_the_context_is_a_context_length_error(chatml_codec):
    from gateway_helpers import echo_policy

    from workbench.gateway import ModelGateway

    policy = echo_policy(chatml_codec)
    policy.context_size = 40
    with ModelGateway(policy) as gw, gw.rollout("q") as r:
        client = r.sync_client.with_options(max_retries=0)
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "word " * 50}])
        assert err.value.code == "context_length_exceeded"
        assert "maximum context length is 40 tokens" in str(err.value)


def test_completions_and_models(gateway):
    with gateway.rollout("q") as r:
        out = r.sync_client.completions.create(model="m", prompt="Hello", max_tokens=20)
        assert out.choices[0].text == "turn 0" and out.object == "text_completion"
        models = r.sync_client.models.list()
        assert [m.id for m in models.data] == ["echo"]
        traj = r.trajectory
        assert traj.steps[0].prompt_ids == r.gateway.policy.codec.encode("Hello")
    outside = httpx.post(f"{gateway.url}/v1/chat/completions", json={"messages": USER})
    assert outside.status_code == 404 and "rollouts/{id}/v1" in outside.json()["error"]["message"]


def test_the_admin_api_opens_and_finishes_rollouts_for_a_subprocess_harness(gateway):
    admin = {"authorization": f"Bearer {gateway.admin_key}"}
    assert httpx.post(f"{gateway.url}/rollouts", json={"task": "q"}).status_code == 401
    made = httpx.post(f"{gateway.url}/rollouts", json={"task": {"question": "2+2?"}}, headers=admin).json()
    harness = (
        "import openai; c = openai.OpenAI(); m = [{'role': 'user', 'content': 'hi'}]; "
        "print(c.chat.completions.create(model='m', messages=m).choices[0].message.content)"
    )
    env = {"OPENAI_BASE_URL": made["base_url"], "OPENAI_API_KEY": made["api_key"], "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", harness], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "turn 0", out.stderr
    done = httpx.post(f"{gateway.url}/rollouts/{made['id']}/finish", json={"answer": "4"}, headers=admin).json()
    assert done["status"] == "finished" and done["calls"] == 1 and done["final_answer"] == "4"
    assert gateway.test_store.get(made["id"]).final_answer == "4"


def test_a_harness_that_raises_ends_its_rollout_as_error_with_the_traceback(gateway):
    with pytest.raises(RuntimeError), gateway.rollout("q") as r:
        raise RuntimeError("harness broke")
    traj = gateway.test_store.get(r.id)
    assert traj.termination == "error" and "harness broke" in (traj.error or "")


def test_every_request_field_is_one_of_openais():
    from openai.types.chat import completion_create_params

    theirs = set(typing.get_type_hints(completion_create_params.CompletionCreateParamsStreaming))
    ours = set(ChatRequest.model_fields)
    assert ours <= theirs, ours - theirs
    body = json.loads(ChatRequest(messages=USER).model_dump_json())
    assert body["n"] == 1


def test_n_choices_are_steps_and_the_harness_continues_with_any(chatml_codec):
    from gateway_helpers import queue_policy

    from workbench.gateway import ModelGateway

    with ModelGateway(queue_policy(chatml_codec, ["red", "blue", "why blue?"])) as gw, gw.rollout("q") as r:
        reply = r.sync_client.chat.completions.create(model="m", messages=USER, n=2, seed=5)
        assert [c.message.content for c in reply.choices] == ["red", "blue"] and [c.index for c in reply.choices] == [
            0,
            1,
        ]
        picked = reply.choices[1].message.model_dump(exclude_none=True)
        r.sync_client.chat.completions.create(model="m", messages=[*USER, picked, {"role": "user", "content": "why?"}])
        traj = r.trajectory
    calls = traj.metadata["gateway"]["calls"]
    assert [(c["choice"], c["step"]) for c in calls] == [(0, 0), (1, 1), (0, 2)]
    assert calls[2]["parent"] == 1 and not traj.metadata["gateway"]["forks"]  # continues choice 1, no fork
    assert len(traj.segments()) == 2 and traj.steps[2].prompt_ids is None  # choice 1 began its own segment
