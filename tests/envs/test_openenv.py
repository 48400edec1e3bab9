"""NB-Agent as an OpenEnv environment: reset / step / state / close on real sandboxed kernels, directly and
served by OpenEnv's own server to OpenEnv's own `EnvClient` over loopback, several sessions at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import ValidationError

from workbench.agent.config import AgentConfig
from workbench.envs import EpisodeHost
from workbench.envs.openenv import NBAgentAction, NBAgentEnvironment
from workbench.envs.server import EnvServer, NBAgentClient
from workbench.errors import ConfigError
from workbench.trajectory import Task


@pytest.fixture(scope="module")
def host() -> Iterator[EpisodeHost]:
    host = EpisodeHost(reward="em", agent=AgentConfig(max_steps=3), max_sessions=2)
    yield host
    host.close()


def test_an_episode_from_reset_to_reward(host: EpisodeHost) -> None:
    env = NBAgentEnvironment(host)
    try:
        first = env.reset(question="What is 6 * 7?", answer="42")
        assert (first.task, first.tools, first.steps_left, first.done) == (
            "What is 6 * 7?",
            ["submit_final_answer"],
            3,
            False,
        )
        assert "submit_final_answer" in first.tools_text and first.notepad_api
        ran = env.step(NBAgentAction(code="x = 6 * 7\nprint(task)\nx"))
        assert (ran.output, ran.ok, ran.done, ran.reward, ran.steps_left) == ("What is 6 * 7?\n42", True, False, 0.0, 2)
        end = env.step(NBAgentAction(turn="<think>known</think>\n<code>submit_final_answer(str(x))</code>"))
        assert (end.done, end.reward, end.final_answer, end.termination) == (True, 1.0, "42", "submitted")
        assert end.rewards == {"em": 1.0, "total": 1.0} and end.format_flags == []
        assert [call["name"] for call in end.host_calls] == ["submit_final_answer"]
        state = env.state
        assert (state.step_count, state.final_answer, state.rewards["total"]) == (2, "42", 1.0)
        with pytest.raises(ConfigError, match="episode is over"):
            env.step(NBAgentAction(code="1"))
    finally:
        env.close()
    assert host.stats()["in_use"] == 0


def test_turns_are_parsed_as_the_loop_parses_them_and_the_budget_ends_the_episode(host: EpisodeHost) -> None:
    env = NBAgentEnvironment(host)
    try:
        env.reset(question="q", answer="a")
        prose = env.step(NBAgentAction(turn="I think the answer is a."))
        assert prose.output.startswith("No code ran") and "missing_code" in " ".join(prose.format_flags)
        broken = env.step(NBAgentAction(code="1 / 0"))
        assert not broken.ok and "ZeroDivisionError" in broken.output
        last = env.step(NBAgentAction(code="'still here'"))
        assert (last.done, last.termination, last.reward, last.steps_left) == (True, "max_steps", 0.0, 0)
    finally:
        env.close()


def test_bad_use_gets_errors_that_name_the_fix(host: EpisodeHost) -> None:
    with pytest.raises(ValidationError, match="either code or turn"):
        NBAgentAction(code="1", turn="<code>1</code>")
    env = NBAgentEnvironment(host)
    with pytest.raises(ConfigError, match="reset the environment first"):
        env.step(NBAgentAction(code="1"))
    with pytest.raises(ConfigError, match="question="):
        env.reset()
    picked = NBAgentEnvironment(EpisodeHost(tasks=[Task(id="a", question="A?"), Task(id="b", question="B?")]))
    try:
        assert picked.reset(seed=3).task == "B?"
    finally:
        picked.close()
        picked.host.close()


def _episode(url: str, index: int) -> tuple[str, str, bool, float | None, str]:
    with NBAgentClient(url).sync() as client:
        reset = client.reset(question=f"What is {index} + 1?", answer=str(index + 1))
        seen = client.step(NBAgentAction(code=f"import os\nmine = {index} + 1\nsorted(os.listdir('/workspace'))"))
        client.step(NBAgentAction(code=f"open('/workspace/only-{index}.txt', 'w').write('x')"))
        done = client.step(NBAgentAction(turn="<think>add</think><code>submit_final_answer(str(mine))</code>"))
        state = client.state()
        return reset.observation.task, seen.observation.output, done.done, done.reward, state.termination


def test_openenv_client_drives_several_sessions_at_once() -> None:
    host = EpisodeHost(reward="em", agent=AgentConfig(max_steps=4), max_sessions=3)
    with EnvServer(host) as server:
        with ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda i: _episode(server.url, i), range(3)))
        deadline = time.monotonic() + 60  # a client's disconnect reaches the server's session close a moment later
        while host.stats()["in_use"] and time.monotonic() < deadline:
            time.sleep(0.05)
        stats = host.stats()
    for index, (task, listing, done, reward, termination) in enumerate(results):
        assert task == f"What is {index} + 1?"
        assert listing == "[]"  # no session sees another's files
        assert (done, reward, termination) == (True, 1.0, "submitted")
    assert stats["in_use"] == 0 and stats["started"] >= 3
    assert host.stats() == {"warm": 0, "in_use": 0, "started": 0}  # stopping the server closed the pool


def test_serving_beyond_loopback_needs_consent() -> None:
    with pytest.raises(ConfigError, match="public=True"):
        EnvServer(EpisodeHost(), address="0.0.0.0")
