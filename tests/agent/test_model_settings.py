"""Agent settings a model carries fill what the caller leaves unset; explicit values always win."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent.config import MODEL_SETTINGS, AgentConfig, policy_settings, with_model_settings
from workbench.errors import ConfigError
from workbench.policies import ScriptedPolicy

MODEL = {"prompt": "compact", "max_context_tokens": 2048, "max_new_tokens": 400, "max_steps": 6}
EXPLICIT = {"prompt": "full", "max_context_tokens": 999, "max_new_tokens": 77, "max_steps": 2}


@given(st.sets(st.sampled_from(sorted(MODEL))))
@settings(max_examples=30, deadline=None)
def test_explicit_fields_win_and_the_rest_come_from_the_model(explicit):
    given_cfg = AgentConfig(**{k: EXPLICIT[k] for k in explicit})
    merged, taken = with_model_settings(given_cfg, MODEL)
    for key in MODEL:
        assert getattr(merged, key) == (EXPLICIT[key] if key in explicit else MODEL[key])
    assert set(taken) == set(MODEL) - explicit
    again, more = with_model_settings(merged, MODEL)  # merging twice changes nothing
    assert again == merged and more == {}


def test_config_files_and_copies_count_as_explicit(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text("[agent]\nmax_steps = 3\n")
    merged, taken = with_model_settings(AgentConfig.load(path), MODEL)
    assert merged.max_steps == 3 and merged.prompt == "compact" and "max_steps" not in taken
    copied = AgentConfig().model_copy(update={"max_new_tokens": 5})
    assert with_model_settings(copied, MODEL)[0].max_new_tokens == 5
    assert with_model_settings(None, MODEL)[0].model_settings()["max_context_tokens"] == 2048


def test_nbagent_runs_with_the_policys_settings():
    from workbench.agent import NBAgent

    policy = ScriptedPolicy(lambda c, t: "<code>print(1)</code>")
    policy.agent_settings = dict(MODEL, some_newer_field=1)
    agent = NBAgent(policy)
    assert agent.config.prompt == "compact" and agent.config.max_steps == 6
    assert agent.settings_from_model == MODEL
    assert NBAgent(policy, config=AgentConfig(max_steps=2)).config.max_steps == 2
    policy.agent_settings = {"trim": "sideways"}
    with pytest.raises(ConfigError, match="trim"):
        policy_settings(policy)


def test_only_model_facing_fields_travel():
    cfg = AgentConfig(temperature=0.3, profile="networked", prompt="compact")
    assert set(cfg.model_settings()) == set(MODEL_SETTINGS)
    assert "temperature" not in cfg.model_settings() and "profile" not in cfg.model_settings()


def test_sft_and_training_record_the_settings_on_the_model(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.agent.config import read_model_settings
    from workbench.train.run import NBAgentEpisodes, stamp_agent_settings
    from workbench.train.sft import sft
    from workbench.trajectory import Step, Task, Trajectory

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids = tok.encode("<code>print(1)</code>")
    traj = Trajectory(
        task=Task("q", "Q?", ["A"]),
        steps=[Step(index=0, raw="<code>print(1)</code>", prompt_ids=ids[:2], completion_ids=ids)],
    )
    sft(model, tok, [traj], epochs=1, progress=False, agent_config=AgentConfig(**MODEL))
    model.save_pretrained(tmp_path / "sft")
    assert read_model_settings(tmp_path / "sft") == AgentConfig(**MODEL).model_settings()

    # GRPO with NB-Agent episodes: what the episodes run (explicit fields over the model's) is recorded
    episodes = NBAgentEpisodes(agent_config=AgentConfig(max_steps=3, max_new_tokens=64))
    stamp_agent_settings(model, episodes)
    model.save_pretrained(tmp_path / "rl")
    saved = read_model_settings(tmp_path / "rl")
    assert saved["max_steps"] == 3 and saved["max_new_tokens"] == 64
    assert saved["prompt"] == "compact" and saved["max_context_tokens"] == 2048  # kept from the SFT model
    plain = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    stamp_agent_settings(plain, object())  # episodes without an agent config record nothing
    assert read_model_settings(plain) == {}
