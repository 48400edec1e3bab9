"""End to end: NB-Agent episodes through real sandboxed kernels, the tool gateway and the store."""

from __future__ import annotations

import pytest

from workbench.agent import AgentConfig, NBAgent
from workbench.policies import ScriptedPolicy
from workbench.store import Store
from workbench.worlds.scripted.solver import world_solver


def test_scripted_solver_does_multi_hop_search_and_notepad(world, pick, world_tools, tmp_path):
    tasks = pick(1, 2) + pick(2, 2) + pick(3, 2)
    with Store(tmp_path / "run") as store:
        agent = NBAgent(
            world_solver(),
            tools=world_tools,
            store=store,
            config=AgentConfig(max_steps=6, max_context_tokens=16384),
            concurrency=3,
        )
        trajectories = agent.run(tasks, progress=False)
        assert len(store) == len(tasks)
        stored = {t.id: t for t in store.iter_trajectories()}
    for traj in trajectories:
        hops = traj.task.metadata["hops"]
        assert traj.termination == "submitted", (traj.termination, traj.error)
        assert traj.final_answer in traj.task.golden_answers
        assert len(traj.steps) == hops + 1  # one search per hop, then submit
        searches = [c for s in traj.steps for c in s.host_calls if c.name == "search"]
        assert [c.arguments["query"] for c in searches] == [f"{e} {p}" for e, _, p in traj.task.metadata["chain"]]
        assert all(c.error is None and "Doc 1" in c.result for c in searches)
        facts = traj.steps[-1].notepad["facts"]
        assert len(facts) == hops  # one fact per hop, written by code in the kernel
        assert "<output>" in traj.steps[0].observation_text and "<notepad>" in traj.steps[0].observation_text
        assert stored[traj.id].final_answer == traj.final_answer


def test_hard_trim_keeps_task_and_notepad_so_the_episode_still_succeeds(world, pick, world_tools):
    # a window that only fits the opening + about one turn: progress survives in the notepad
    tasks = pick(3, 2)
    agent = NBAgent(
        world_solver(),
        tools=world_tools,
        concurrency=2,
        config=AgentConfig(max_steps=8, max_context_tokens=3600, max_new_tokens=300, trim="hard"),
    )
    for traj in agent.run(tasks, progress=False):
        assert traj.termination == "submitted", (traj.termination, traj.error)
        assert traj.final_answer in traj.task.golden_answers
        trimmed = [s for s in traj.steps[1:] if s.prompt_ids is not None]
        assert trimmed, "the small window should have forced a trim"
        for step in traj.steps:
            assert step.context_tokens + len(step.completion_ids) <= 3600
        segs = traj.segments()
        assert len(segs) == 1 + len(trimmed)


def test_budget_notice_and_max_steps(world, pick, world_tools):
    loop = ScriptedPolicy.from_turns(["<think>again</think>\n<code>\nprint('hi')\n</code>"])
    [traj] = NBAgent(loop, tools=world_tools, config=AgentConfig(max_steps=3)).run(pick(1, 1), progress=False)
    assert traj.termination == "max_steps" and len(traj.steps) == 3
    assert "[2 steps and" in traj.steps[0].observation_text
    assert "hi" in traj.steps[0].observation_text


def test_one_failing_episode_never_ends_the_batch(world, world_tools):
    def script(context: str, turn: int) -> str:
        if "birthplace" in context.split("Task:")[-1][:200]:
            raise RuntimeError("backend exploded")
        if "country of" in context.split("Task:")[-1][:200]:
            return "<think>bye</think>\n<code>\nimport os; os._exit(3)\n</code>"
        return "<think>done</think>\n<code>\nsubmit_final_answer('x')\n</code>"

    tasks = world.tasks("test")[:12]
    trajectories = NBAgent(ScriptedPolicy(script), tools=world_tools, concurrency=4).run(tasks, progress=False)
    terminations = {t.termination for t in trajectories}
    assert len(trajectories) == 12
    assert "submitted" in terminations
    for traj in trajectories:
        q = traj.task.question
        if "birthplace" in q:
            assert traj.termination == "policy_error" and "exploded" in traj.error
        elif "country of" in q:
            assert traj.termination == "kernel_died"


def test_malformed_turns_are_flagged_and_defined(world, pick, world_tools):
    # prose then end-of-sequence: flagged, nothing runs, the episode ends as `no_code`
    [traj] = NBAgent(ScriptedPolicy.from_turns(["I will just talk."]), tools=world_tools).run(
        pick(1, 1), progress=False
    )
    assert traj.steps[0].format_flags == ["missing_think", "missing_code", "text_outside_tags"]
    assert traj.termination == "no_code" and "No code ran" in traj.steps[0].observation_text
    # a fenced block inside <code> runs; duplicated code blocks run the first only and say so
    turns = [
        "<think>ok</think><code>\n```python\nprint(6*7)\n```\n</code>",
        "<think>x</think><code>submit_final_answer('42')</code><code>print('never')</code>",
    ]
    [traj] = NBAgent(ScriptedPolicy.from_turns(turns), tools=world_tools).run(pick(1, 1), progress=False)
    assert traj.steps[0].format_flags == ["fenced_code"] and "42" in traj.steps[0].observation_text
    assert traj.final_answer == "42"


@pytest.mark.slow
def test_tiny_transformers_model_runs_real_episodes_token_exact(world, pick, world_tools, tiny_model_dir):
    from workbench.policies import TransformersPolicy

    policy = TransformersPolicy(tiny_model_dir)
    config = AgentConfig(max_steps=2, max_new_tokens=40, max_context_tokens=1500, seed=0)
    trajectories = NBAgent(policy, tools=world_tools, config=config, concurrency=2).run(pick(1, 2), progress=False)
    _assert_token_exact(policy.codec, trajectories)


@pytest.mark.slow
def test_openai_policy_against_serve_model_runs_real_episodes(world, pick, world_tools, tiny_model_dir):
    from workbench.policies import ModelServer, OpenAIPolicy

    with ModelServer(tiny_model_dir) as server:
        policy = OpenAIPolicy(server.url, tokenizer=str(tiny_model_dir))
        config = AgentConfig(max_steps=2, max_new_tokens=40, max_context_tokens=1500, seed=0)
        trajectories = NBAgent(policy, tools=world_tools, config=config, concurrency=2).run(pick(1, 2), progress=False)
    _assert_token_exact(policy.codec, trajectories)


def _assert_token_exact(codec, trajectories):
    for traj in trajectories:
        assert traj.termination in ("max_steps", "submitted", "no_code", "token_budget"), traj.error
        assert traj.steps
        for step in traj.steps:
            assert codec.decode(step.completion_ids) == step.raw
            assert step.logprobs is not None and len(step.logprobs) == len(step.completion_ids)
            if step.observation_ids:
                assert codec.decode(step.observation_ids) == step.observation_text
        seg = traj.segments()[0]
        assert len(seg["completion_ids"]) == len(seg["env_mask"]) == len(seg["logprobs"])
