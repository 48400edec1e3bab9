"""A refusal by `serve-env` (OpenEnv's own server over NB-Agent) and by the verifiers bridge reaches the client
in words naming the problem and the fix, through each standard's own client, and the session serves on:
OpenEnv's `GenericEnvClient` and the typed `NBAgentClient` over the WebSocket, `httpx` on the HTTP routes, and
`VerifiersEpisode` (the bridge's caller) on the bridge."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient

from workbench.agent.config import AgentConfig
from workbench.envs import EpisodeHost
from workbench.envs.bridge_process import BridgeError
from workbench.envs.openenv import NBAgentAction
from workbench.envs.server import EnvServer, NBAgentClient
from workbench.envs.verifiers_source import VerifiersEnv, sidecar_python
from workbench.errors import ConfigError
from workbench.trajectory import Task

CODE_OR_TURN = (
    'an NBAgentAction carries either code or turn, not both and not neither: send {"code": "..."} to run '
    'Python as is, or {"turn": "<think>...</think><code>...</code>"} to run a model turn\'s code'
)
INVALID = "Server error: Invalid message: "  # OpenEnv's words for a message that fails validation, then ours
NO_EPISODE = "step() before reset(): reset the environment first"


@pytest.fixture(scope="module")
def server() -> Iterator[EnvServer]:
    """`workbench serve-env --tools none --reward em` with one task to pick, on loopback."""
    host = EpisodeHost(
        reward="em", agent=AgentConfig(max_steps=20), max_sessions=2, tasks=[Task(id="t", question="T?")]
    )
    with EnvServer(host) as served:
        yield served


def refusal(call: object) -> str:
    with pytest.raises(RuntimeError) as caught:
        call()  # type: ignore[operator]
    return str(caught.value)


# (the action sent, what the client must show); each is refused and the session runs the next cell
BAD_ACTIONS = [
    ({"code": "1", "turn": "<code>1</code>"}, f"{INVALID}action: {CODE_OR_TURN} (code: VALIDATION_ERROR)"),
    ({}, f"{INVALID}action: {CODE_OR_TURN} (code: VALIDATION_ERROR)"),
    ({"code": "x" * 1_000_000, "turn": "y"}, f"{INVALID}action: {CODE_OR_TURN} (code: VALIDATION_ERROR)"),
    ({"code": 5}, f"{INVALID}code: Input should be a valid string (code: VALIDATION_ERROR)"),
    ({"cod": "1"}, f"{INVALID}cod: this field is not supported here; remove it (code: VALIDATION_ERROR)"),
    ({"code": "\ud800", "turn": "\udfff"}, f"{INVALID}action: {CODE_OR_TURN} (code: VALIDATION_ERROR)"),
    ({"code": "1", "é" * 5000: 1}, f"{INVALID}{'é' * 100}: this field is not supported here; remove it"),
]


def test_generic_client_sees_each_refusal_and_its_session_runs_on(server: EnvServer) -> None:
    with GenericEnvClient(base_url=server.url).sync() as client:
        assert refusal(lambda: client.step({"code": "1"})).startswith(f"Server error: {NO_EPISODE}")
        assert refusal(lambda: client.reset(seed="x")) == (
            "Server error: reset(seed='x'): the seed is an int (it picks one of the host's tasks) or None "
            "(code: EXECUTION_ERROR)"
        )
        assert client.reset(question="What is 6 * 7?", answer="42").observation["task"] == "What is 6 * 7?"
        client.step({"code": "x = 6 * 7"})
        for action, shown in BAD_ACTIONS:
            assert refusal(lambda action=action: client.step(action)).startswith(shown), action
            assert client.step({"code": "x"}).observation["output"] == "42"  # the same episode, its kernel intact
        done = client.step({"turn": "<think>known</think><code>submit_final_answer(str(x))</code>"})
        assert (done.done, done.reward) == (True, 1.0)
        assert client.state()["step_count"] == 2 + len(BAD_ACTIONS)  # a refused action is not a step


def test_typed_client_sees_refusals_and_runs_on(server: EnvServer) -> None:
    with NBAgentClient(server.url).sync() as client:
        assert refusal(lambda: client.step(NBAgentAction(code="1"))) == (
            f"Server error: {NO_EPISODE} (served, an episode lives in one WebSocket session: OpenEnv's HTTP /step "
            "builds a fresh environment per request, so step over /ws with NBAgentClient or OpenEnv's "
            "GenericEnvClient) (code: EXECUTION_ERROR)"
        )
        assert client.reset(seed=4).observation.task == "T?"  # the host's task
        both = NBAgentAction.model_construct(code="1", turn="<code>1</code>")  # what validation would refuse here
        assert refusal(lambda: client.step(both)) == f"{INVALID}action: {CODE_OR_TURN} (code: VALIDATION_ERROR)"
        assert client.step(NBAgentAction(code="6 * 7")).observation.output == "42"


def test_http_routes_answer_refusals_as_json_and_serve_on(server: EnvServer) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as http:
        for action, _ in BAD_ACTIONS[:5]:
            r = http.post("/step", json={"action": action})
            assert r.status_code == 422, r.text
            [error] = r.json()["detail"]  # FastAPI's shape, the input not echoed back
            assert error["msg"] in (f"action: {CODE_OR_TURN}", "code: Input should be a valid string") or error[
                "msg"
            ].endswith("this field is not supported here; remove it")
            assert error["input"] is None
        surrogate = json.dumps({"action": {"code": "\ud800", "turn": "x"}}).encode()  # an escaped lone surrogate
        r = http.post("/step", content=surrogate, headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"]
        r = http.post("/step", json={"action": {"code": "1"}})
        assert r.status_code == 400 and r.json()["detail"].startswith(NO_EPISODE)
        assert "step over /ws" in r.json()["detail"]
        r = http.post("/reset", json={"bogus": 1})
        assert r.status_code == 400
        assert r.json() == {"detail": "task has no 'question' field; tasks need id, question, golden_answers"}
        r = http.post("/reset", json={"question": "Q?", "answer": "a"})  # and the next request is served
        assert r.status_code == 200 and r.json()["observation"]["task"] == "Q?"


def test_a_direct_refusal_is_plain_json_and_keeps_its_words() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as caught:
        NBAgentAction(code="1", turn="<code>1</code>")
    [error] = caught.value.errors()
    assert error["msg"] == CODE_OR_TURN and "ctx" not in error  # no exception object in its context
    json.loads(caught.value.json())


# -- the verifiers bridge, through its caller -------------------------------------------------------------


@pytest.fixture(scope="module")
def arith() -> Iterator[VerifiersEnv]:
    try:
        sidecar_python()
    except ConfigError as exc:
        if os.environ.get("WORKBENCH_VERIFIERS_OPTIONAL") == "1":
            pytest.skip(f"WORKBENCH_VERIFIERS_OPTIONAL=1 and {exc}")
        raise
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent))  # tests/envs/vf_arith.py
        source = VerifiersEnv.from_spec("verifiers:vf-arith?scale=2")
        yield source
        source.close()


async def _bridge_refusals(source: VerifiersEnv) -> list[str]:
    episode, shown = await source.open(), []
    for bad in ({"bogus": 1}, {"seed": "x"}, {"prompt": [{"role": "user"}]}):
        with pytest.raises(BridgeError) as caught:
            await episode.reset(**bad)
        shown.append(str(caught.value))
    with pytest.raises(BridgeError) as caught:
        await episode.step({"content": "3"})  # the failed reset left no episode
    shown.append(str(caught.value))
    with pytest.raises(BridgeError) as caught:
        await source.bridge().request("reset", session="other", args=[1])
    shown.append(str(caught.value))
    first = await episode.reset(seed=0)  # and the bridge plays on
    assert first.messages[-1] == {"role": "user", "content": "What is 1 + 2?"}
    assert (await episode.step({"content": "3"})).messages == [{"role": "user", "content": "Now add 3."}]
    await episode.close()
    return shown


def test_the_verifiers_bridge_refusals_reach_its_caller_and_it_plays_on(arith: VerifiersEnv) -> None:
    keys = "seed (or example) and split ('train' or 'eval'), or a task's own fields: prompt or question, answer, info"
    assert asyncio.run(_bridge_refusals(arith)) == [
        f"ValueError: reset got bogus; it takes {keys}",
        "ValueError: reset(seed='x', split='train'): the seed is an int, the split 'train' or 'eval'",
        "ValueError: reset(prompt=...): message 0 is {'role': 'user'}; each is "
        '{"role": "system", "user" or "assistant", "content": "the text"}',
        "ValueError: no session 's1': reset it first",
        f"ValueError: reset's args are a JSON object ({keys}), got list",
    ]


def test_a_verifiers_action_names_the_type_it_needs():
    """Checked before anything reaches the sidecar: the turn's text must be a string."""
    import asyncio

    from workbench.envs.verifiers_source import VerifiersEpisode
    from workbench.errors import ConfigError

    episode = VerifiersEpisode(None, "s1")  # type: ignore[arg-type]  # refused before the bridge is used
    with pytest.raises(ConfigError, match=r"the turn's text as a string\}, got 'content' as int"):
        asyncio.run(episode.step({"content": 5}))
    with pytest.raises(ConfigError, match=r"got keys \['text'\]"):
        asyncio.run(episode.step({"text": "hi"}))
