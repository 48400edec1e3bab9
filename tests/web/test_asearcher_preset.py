"""The ASearcher preset: its prompt and tools, a long horizon, and short_text shrinking read pages."""

from __future__ import annotations

import pytest

from workbench.agent import NBAgent
from workbench.agent.asearcher import ASEARCHER_AGENT, asearcher_config, asearcher_tools
from workbench.agent.episode import opening_messages
from workbench.errors import ConfigError
from workbench.policies.scripted import ScriptedPolicy
from workbench.tools import InMemoryRetriever
from workbench.trajectory import Task
from workbench.web import HttpFetcher


def test_preset_config_and_tools(site):
    from workbench.web import LocalSiteFetcher

    config = asearcher_config()
    assert config.prompt == "asearcher" and config.max_steps >= 32 and config.short_text == 100
    assert asearcher_config(max_steps=128).max_steps == 128
    with pytest.raises(ConfigError, match="short_text"):
        asearcher_config(short_text=5)
    tools = asearcher_tools(LocalSiteFetcher(site), retriever=InMemoryRetriever(["a doc"]))
    assert tools.names == ["search", "access", "find_in_page", "answer"]


def test_preset_tools_refuse_a_retriever_without_search():
    from workbench.web import LocalSiteFetcher

    with pytest.raises(ConfigError, match="retrieve"):
        asearcher_tools(LocalSiteFetcher({}), retriever=object())
    assert asearcher_tools(LocalSiteFetcher({})).names == ["access", "find_in_page", "answer"]


class _Env:
    class prompt:
        tools_text, tool_names, notepad_api = "TOOLS", ("search", "access", "answer"), "NOTEPAD"


def test_asearcher_prompt_names_its_tools_and_the_notepad():
    [system, user] = opening_messages(Task(id="q", question="Q?"), _Env(), asearcher_config())
    text = system["content"]
    assert "TOOLS" in text and "NOTEPAD" in text and "at most 32 steps" in text
    assert "access(url, page=2)" in text and "find_in_page" in text and "notepad.add_fact" in text
    assert user["content"].strip() == "Task: Q?"


TURNS = [
    "<think>read</think><code>print(access(URL))</code>",
    "<think>keep it</think><code>notepad.add_fact('the needle is on page 2 of ' + URL)\n"
    "print(access(URL, page=2))</code>",
    "<think>done reading</think><code>print('thinking')</code>",
    "<think>sure</think><code>answer('needle')</code>",
]


@pytest.mark.slow
def test_short_text_shrinks_a_read_page_after_the_next_turn(trouble):
    seen: list[str] = []  # the context of every turn, as the model saw it
    url = trouble + "/long"
    turns = [TURNS[0].replace("<code>", f"<code>URL = {url!r}\n"), *TURNS[1:]]

    def script(context: str, _turn: int) -> str:  # one episode: its turn is how many contexts came
        seen.append(context)
        return turns[min(len(seen) - 1, len(turns) - 1)]

    task = Task(id="needle", question="Where is the needle?", golden_answers=["needle"])
    fetcher = HttpFetcher(allow_hosts=[trouble.removeprefix("http://")])
    agent = NBAgent(
        ScriptedPolicy(script),
        tools=asearcher_tools(fetcher, window_chars=1500),
        config=asearcher_config(max_context_tokens=65536),
    )
    [traj] = agent.run([task], progress=False)
    fetcher.close()
    assert traj.termination == "submitted" and traj.final_answer == "needle", traj.error
    window1 = traj.steps[0].observation_text
    window2 = traj.steps[1].observation_text
    assert ">>>> Page 1/" in window1 and ">>>> Page 2/" in window2
    tail1 = window1.split(">>>> Page 1/")[1][200:400]  # text well past the first 100 characters
    tail2 = window2.split(">>>> Page 2/")[1][200:400]
    # turn 1 sees page 1 whole; turn 2 sees page 2 whole and page 1 as a stub; turn 3 both as stubs
    assert tail1 in seen[1]
    assert tail1 not in seen[2] and tail2 in seen[2]
    assert "page shortened after you read it" in seen[2]
    assert tail1 not in seen[3] and tail2 not in seen[3] and seen[3].count("page shortened") == 2
    assert all("the needle is on page 2" in c for c in seen[2:])  # the note stays
    # the steps record what each turn saw: the context was rebuilt, so its prompt is recorded whole
    assert traj.steps[2].prompt_ids is not None and traj.steps[3].prompt_ids is not None
    assert traj.steps[0].observation_text == window1  # the record keeps the full page


def test_preset_values_are_valid_agent_settings():
    assert set(ASEARCHER_AGENT) <= set(type(asearcher_config()).model_fields)
