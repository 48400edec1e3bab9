"""`serve-model` refusals through the `openai` client: each malformed request is an `openai` error whose
message names the problem and the fix, and the server answers the next request."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from workbench.policies import ModelServer

SERVED = (
    "this server serves GET /health, GET /v1/models, POST /v1/completions (a prompt as text or token ids), "
    "POST /tokenize (text or chat messages) and POST /detokenize; for a chat, POST /tokenize with the messages and "
    "complete the ids with POST /v1/completions, as workbench's OpenAIPolicy does"
)


@pytest.fixture(scope="module")
def client(tiny_policy) -> Iterator[tuple[openai.OpenAI, str]]:
    with ModelServer(policy=tiny_policy) as server:
        with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120) as api:
            yield api, api.models.list().data[0].id


BAD_COMPLETIONS = [
    ({"stream": True}, openai.BadRequestError, "stream: streaming is not supported; send stream=false"),
    (
        {"prompt": [[-5]]},
        openai.BadRequestError,
        "token id -5 is outside this model's vocabulary (0..405): encode prompts with this model's tokenizer",
    ),
    ({"logprobs": 99}, openai.BadRequestError, "logprobs must be between 0 and 20, got 99"),
    (
        {"max_tokens": -3},
        openai.BadRequestError,
        "max_tokens must be >= 1, got -3 (leave it out: up to the context's end)",
    ),
    ({"extra_body": {"bogus": 1}}, openai.BadRequestError, "bogus: this field is not supported here; remove it"),
    ({"model": "nope"}, openai.NotFoundError, "model 'nope' is not served here; this server serves '"),
    ({"prompt": ""}, openai.BadRequestError, "empty prompt: encode at least one token"),
]


@pytest.mark.parametrize(("fields", "error", "message"), BAD_COMPLETIONS)
def test_a_refused_completion_names_the_fix_and_the_next_is_served(client, fields, error, message) -> None:
    api, model = client
    with pytest.raises(error) as caught:
        api.completions.create(**{"model": model, "prompt": "hi", "max_tokens": 2, **fields})
    assert message in caught.value.message, caught.value.message
    assert caught.value.body["message"].startswith(message.split(" (")[0])  # the OpenAI error object's message
    assert api.completions.create(model=model, prompt="hi", max_tokens=2).choices[0].finish_reason


def test_routes_the_server_lacks_name_what_it_serves(client) -> None:
    api, model = client
    calls = {
        "POST /v1/chat/completions": lambda: api.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}]
        ),
        "POST /v1/embeddings": lambda: api.embeddings.create(model=model, input="hi"),
        f"GET /v1/models/{model}": lambda: api.models.retrieve(model),
    }
    for route, call in calls.items():
        with pytest.raises(openai.NotFoundError) as caught:
            call()
        assert caught.value.message == f"Error code: 404 - {route} is not served here; {SERVED}"
    with pytest.raises(openai.APIStatusError) as caught:
        api.get("/completions", cast_to=object)  # a route there, the wrong method
    assert caught.value.status_code == 405 and "GET /v1/completions is not served here; this server" in str(
        caught.value
    )
    assert api.completions.create(model=model, prompt="hi", max_tokens=2).choices[0].finish_reason
