"""The context watcher keeps every prompt inside the policy's real context size, trimming first."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.agent import AgentConfig, NBAgent
from workbench.agent.context import window
from workbench.agent.episode import opening_messages
from workbench.agent.episode_sandbox import LocalEpisodeSandbox


@given(st.integers(64, 10**6), st.one_of(st.none(), st.integers(1, 10**6)))
def test_window_never_exceeds_either_limit(configured, model):
    w = window(configured, model)
    assert w <= configured and (model is None or w <= model)
    assert w == (configured if model is None else min(configured, model))


@pytest.mark.slow
def test_default_config_never_overflows_a_small_model(world, pick, world_tools, tiny_model_dir, tmp_path):
    """The default window (4096) is larger than this model's (the opening + 150 tokens): episodes trim
    and go on instead of ending in policy_error."""
    from workbench.policies import TransformersPolicy
    from workbench.runtime import notepad_api_doc

    tasks = pick(3, 2)
    probe = TransformersPolicy(tiny_model_dir, device="cpu")
    env = LocalEpisodeSandbox(
        None, type("G", (), {"registry": world_tools})(), world_tools.prompt_text(), notepad_api_doc()
    )
    opening = len(probe.codec.chat(opening_messages(tasks[0], env, AgentConfig())))
    small = tmp_path / "small"
    shutil.copytree(tiny_model_dir, small)
    tok_cfg = json.loads((small / "tokenizer_config.json").read_text())
    (small / "tokenizer_config.json").write_text(json.dumps({**tok_cfg, "model_max_length": opening + 150}))
    policy = TransformersPolicy(small, device="cpu")
    assert policy.context_size == opening + 150

    config = AgentConfig(max_steps=4, max_new_tokens=60, temperature=1.0, seed=1)  # max_context_tokens: 4096
    trajectories = NBAgent(policy, tools=world_tools, config=config, concurrency=2).run(tasks, progress=False)
    for traj in trajectories:
        assert traj.termination != "policy_error", traj.error
        assert traj.steps, traj.error
        for step in traj.steps:
            assert step.context_tokens + len(step.completion_ids) <= policy.context_size
    assert any(s.prompt_ids is not None for t in trajectories for s in t.steps[1:]) or all(
        len(t.steps) == 1 for t in trajectories
    )  # a later turn re-recorded its context: it trimmed

    tight = AgentConfig(max_steps=2, max_new_tokens=400)  # a turn larger than the model's whole window
    [traj] = NBAgent(policy, tools=world_tools, config=tight, concurrency=1).run(tasks[:1], progress=False)
    assert traj.termination == "token_budget" and "no room for a turn" in traj.error
