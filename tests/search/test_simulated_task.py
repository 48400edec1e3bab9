"""The task reaches the simulator: `for_task`, the search tool, Search-R1 episodes, the training step."""

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.policies import ScriptedPolicy
from workbench.search import SimulatedSearch
from workbench.tools import search_tool
from workbench.trajectory import Task


def writer(context: str, turn: int) -> str:
    return "Doc 1: (Title: T) one passage.\nDoc 2: (Title: U) another passage."


def make(**kw) -> SimulatedSearch:
    return SimulatedSearch(ScriptedPolicy(writer), total_steps=4, seed=0, **kw)


TASK = Task(id="t7", question="Who founded Varnholt?", golden_answers=["Ada Brell", "A. Brell"])


def test_for_task_names_the_first_gold_answer_and_logs_the_task():
    sim = make(p_start=0.0, p_end=1.0)
    sim.set_training_step(4)  # i = m → p = p_e = 1: always noisy
    hits = sim.for_task(TASK.question, TASK.golden_answers, task_id=TASK.id).search("Varnholt founder", 2)
    call = sim.calls[-1]
    assert 'question: "Who founded Varnholt?" whose answer is Ada Brell.' in call.prompt
    assert (call.task_id, call.step, call.p, call.noisy, call.useful) == ("t7", 4, 1.0, True, False)
    assert all(h.noisy and h.document["p"] == 1.0 for h in hits)


def test_search_tool_binds_the_task_others_ignore_it():
    sim = make()
    tool = search_tool(sim, task=TASK)
    assert tool("Varnholt founder", top_k=2).startswith("Doc 1 (Title: T) one passage.")
    assert sim.calls[-1].question == TASK.question and sim.calls[-1].task_id == "t7"
    from workbench.tools import InMemoryRetriever

    plain = search_tool(InMemoryRetriever(["Paris is in France."]), task=TASK)
    assert "Paris" in plain("Paris", top_k=1)


def test_search_r1_episodes_bind_each_task_and_expose_the_curriculum():
    from workbench.train.episodes import SearchR1Episodes

    sim = make(p_start=0.0, p_end=0.0)
    runner = SearchR1Episodes(sim, max_turns=2, max_turn_tokens=64, top_k=2)
    assert runner.curricula == [sim]
    acting = ScriptedPolicy.from_turns(["<search> founder </search>", "<answer> Ada Brell </answer>"])
    [traj] = asyncio.run(runner([TASK], acting))
    assert traj.final_answer == "Ada Brell"
    assert sim.calls[-1].question == TASK.question and sim.calls[-1].answer == "Ada Brell"
    result = traj.steps[0].host_calls[0].result
    assert result[0]["noisy"] is False and result[0]["p"] == 0.0


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=40), st.lists(st.text(max_size=20), max_size=3))
def test_any_question_and_answers_reach_the_prompt(question, answers):
    sim = make()
    sim.for_task(question, answers, task_id="x").search("q", 1)
    gold = answers[0] if answers else ""
    assert f'question: "{question}" whose answer is {gold}.' in sim.calls[-1].prompt


def test_set_training_step_moves_p():
    sim = make(p_start=0.0, p_end=0.5)
    sim.set_training_step(2)  # (4^{2/4} - 1)/3 · .5 = (2 - 1)/3 · .5 = .166667
    assert sim.p == pytest.approx(1 / 6)


@pytest.mark.slow
def test_nbagent_episodes_bind_each_tasks_search_in_real_kernels():
    """NB-Agent episodes with a simulator: each episode's `search` tool (called from its sandboxed kernel)
    reaches the simulator with that episode's question and first gold answer."""
    from workbench.agent.config import AgentConfig
    from workbench.train.run import NBAgentEpisodes

    sim = make()
    tasks = [TASK, Task(id="t8", question="Where is Krege?", golden_answers=["Oslo"])]
    runner = NBAgentEpisodes(agent_config=AgentConfig(max_steps=2, seed=0), simulator=sim, concurrency=2)
    assert runner.curricula == [sim]
    acting = ScriptedPolicy.from_turns(
        [
            "<think>look it up</think>\n<code>\nprint(search('founder', top_k=2))\n</code>",
            "<think>done</think>\n<code>\nsubmit_final_answer('x')\n</code>",
        ]
    )

    async def go():
        try:
            return await runner(tasks, acting)
        finally:
            await runner.aclose()

    trajs = asyncio.run(go())
    assert [t.termination for t in trajs] == ["submitted", "submitted"]
    assert "Doc 1 (Title: T) one passage." in trajs[0].steps[0].observation_text
    got = sorted((c.task_id, c.question, c.answer) for c in sim.calls)
    assert got == [("t7", TASK.question, "Ada Brell"), ("t8", "Where is Krege?", "Oslo")]
