import asyncio
import math

import httpx
import pytest

from workbench.errors import ConfigError, PolicyError
from workbench.policies import ByteCodec, ModelServer, OpenAIPolicy, SamplingParams, generate
from workbench.policies.openai_compat import RemoteCodec


@pytest.fixture(scope="module")
def server(tiny_policy):
    with ModelServer(policy=tiny_policy) as srv:
        yield srv


def test_endpoints(server, tiny_policy):
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    [card] = httpx.get(server.url + "/v1/models").json()["data"]
    ids = tiny_policy.codec.encode("<code>x</code>")
    tok = httpx.post(server.url + "/tokenize", json={"prompt": "<code>x</code>"}).json()
    assert tok["tokens"] == ids and tok["count"] == len(ids)
    assert httpx.post(server.url + "/detokenize", json={"tokens": ids}).json() == {"prompt": "<code>x</code>"}
    msgs = [{"role": "user", "content": "hi"}]
    assert httpx.post(server.url + "/tokenize", json={"messages": msgs}).json()["tokens"] == tiny_policy.codec.chat(
        msgs
    )
    body = {
        "model": card["id"],
        "prompt": "hello",
        "max_tokens": 5,
        "temperature": 0,
        "logprobs": 0,
        "return_token_ids": True,
    }
    [choice] = httpx.post(server.url + "/v1/completions", json=body).json()["choices"]
    assert len(choice["token_ids"]) == len(choice["logprobs"]["token_logprobs"]) <= 5
    assert choice["prompt_token_ids"] == tiny_policy.codec.encode("hello")


def test_bad_requests_get_openai_style_errors(server):
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "x", "stream": True})
    assert r.status_code == 400 and "stream" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "x", "model": "other"})
    assert r.status_code == 404
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "x", "temperature": -2})
    assert r.status_code == 400 and "temperature" in r.json()["error"]["message"]


@pytest.mark.parametrize("with_tokenizer", [True, False])
def test_openai_policy_matches_local_greedy(server, tiny_policy, tiny_model_dir, chat_prompts, with_tokenizer):
    remote = OpenAIPolicy(server.url + "/v1", tokenizer=str(tiny_model_dir) if with_tokenizer else None)
    assert remote.token_space and remote.describe()["token_space"]
    assert isinstance(remote.codec, RemoteCodec) != with_tokenizer
    assert remote.codec.chat([{"role": "user", "content": "hi"}]) == tiny_policy.codec.chat(
        [{"role": "user", "content": "hi"}]
    )
    params = SamplingParams(max_new_tokens=16, temperature=0)
    local = generate(tiny_policy, chat_prompts, params)
    got = asyncio.run(remote.generate(chat_prompts, params))
    for mine, ref in zip(got, local, strict=True):
        assert mine.token_ids == ref.token_ids
        assert (
            mine.text
            == ref.text
            == tiny_policy.codec.decode(mine.token_ids[:-1] if mine.finish_reason == "eos" else mine.token_ids)
        )
        assert mine.finish_reason == ref.finish_reason
        assert mine.logprobs == pytest.approx(ref.logprobs, abs=1e-4)


def test_openai_policy_stop_and_seed(server, tiny_policy, tiny_model_dir, chat_prompts):
    remote = OpenAIPolicy(server.url, tokenizer=str(tiny_model_dir))
    params = SamplingParams(max_new_tokens=30, temperature=1.0, seed=11)
    [free] = generate(tiny_policy, chat_prompts[:1], params)
    stop = tiny_policy.codec.decode(free.token_ids[8:10])
    stopped = SamplingParams(max_new_tokens=30, temperature=1.0, seed=11, stop=[stop])
    [local] = generate(tiny_policy, chat_prompts[:1], stopped)
    [got] = asyncio.run(remote.generate(chat_prompts[:1], stopped))
    assert got.finish_reason == local.finish_reason == "stop"
    assert got.token_ids == local.token_ids and got.text == local.text and got.text.endswith(stop)
    assert all(math.isfinite(x) for x in got.logprobs)


def test_text_fallback_when_server_has_no_tokenize():
    import socket
    import threading
    import time

    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/v1/models")
    async def models():
        return {"data": [{"id": "plain"}]}

    @app.post("/v1/completions")
    async def completions(body: dict):
        return {
            "choices": [{"text": body["prompt"][-3:] + "</code>", "finish_reason": "stop", "stop_reason": "</code>"}]
        }

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        policy = OpenAIPolicy(f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
        assert not policy.token_space and "TEXT MODE" in policy.describe()["note"]
        assert isinstance(policy.codec, ByteCodec) and policy.model == "plain"
        [c] = asyncio.run(policy.generate([policy.codec.encode("abcdef")], SamplingParams(stop=["</code>"])))
        assert (c.text, c.finish_reason, c.logprobs) == ("def</code>", "stop", None)
        assert policy.codec.decode(c.token_ids) == c.text
    finally:
        server.should_exit = True
        thread.join(5)


def test_unreachable_server_and_bad_url():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens here now
    with pytest.raises(PolicyError, match="serve-model"):
        OpenAIPolicy(f"http://127.0.0.1:{port}/v1", retries=1, backoff=0.01)
    with pytest.raises(ConfigError, match="http://"):
        OpenAIPolicy("127.0.0.1:8000")


def test_model_server_refuses_non_loopback(tiny_policy):
    with pytest.raises(ConfigError, match="loopback"):
        ModelServer(policy=tiny_policy, host="0.0.0.0")


def test_remote_codec_takes_lone_surrogates(server, tiny_policy):
    """The server-side codec follows the one text rule: a lone surrogate is sent as U+FFFD, never raises."""
    remote = OpenAIPolicy(server.url + "/v1")
    assert isinstance(remote.codec, RemoteCodec)
    assert remote.codec.encode("a\ud800b") == tiny_policy.codec.encode("a\ufffdb")
    msgs = [{"role": "user", "content": "hi \udcff"}]
    assert remote.codec.chat(msgs) == tiny_policy.codec.chat([{"role": "user", "content": "hi \ufffd"}])
