"""A model dir carries its agent settings and its context size; every backend reports both."""

from __future__ import annotations

import asyncio
import json
import shutil

import httpx
import pytest

from workbench.agent.config import AgentConfig, read_model_settings, stamp_model
from workbench.errors import ConfigError, PolicyError
from workbench.policies import (
    ModelServer,
    OpenAIPolicy,
    SamplingParams,
    ScriptedPolicy,
    TransformersPolicy,
    generate,
    load_policy,
)
from workbench.policies.base import Policy, policy_context_size

DEMO_LIKE = AgentConfig(prompt="compact", max_context_tokens=512, max_new_tokens=40, max_steps=3)


@pytest.fixture(scope="module")
def stamped_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model saved with agent settings, as SFT / training / the demo save it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("stamped")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    stamp_model(model, DEMO_LIKE)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(out)
    return out


def test_save_pretrained_writes_the_settings_into_config_json(stamped_dir):
    saved = json.loads((stamped_dir / "config.json").read_text())["workbench_agent"]
    assert saved == DEMO_LIKE.model_settings()
    assert read_model_settings(stamped_dir) == DEMO_LIKE.model_settings()


def test_transformers_policy_and_load_policy_expose_them(stamped_dir, tiny_model_dir):
    policy = load_policy(f"transformers:{stamped_dir}", device="cpu")
    assert policy.agent_settings["prompt"] == "compact" and policy.agent_settings["max_context_tokens"] == 512
    assert TransformersPolicy(tiny_model_dir, device="cpu").agent_settings == {}
    assert isinstance(policy, Policy) and isinstance(ScriptedPolicy(lambda c, t: "x"), Policy)


def test_context_size_is_the_binding_limit(tiny_model_dir, tmp_path):
    policy = TransformersPolicy(tiny_model_dir, device="cpu")
    assert policy.context_size == policy.model.config.max_position_embeddings == 2048  # tokenizer: no limit
    short = tmp_path / "short"
    shutil.copytree(tiny_model_dir, short)
    tok_cfg = json.loads((short / "tokenizer_config.json").read_text())
    (short / "tokenizer_config.json").write_text(json.dumps({**tok_cfg, "model_max_length": 100}))
    clipped = TransformersPolicy(short, device="cpu")
    assert policy_context_size(clipped) == 100  # the tokenizer's limit binds
    with pytest.raises(PolicyError, match="does not fit the model's context of 100"):
        generate(clipped, [[5] * 100], SamplingParams(max_new_tokens=4))
    [out] = generate(clipped, [[5] * 98], SamplingParams(max_new_tokens=50, temperature=0))
    assert len(out.token_ids) <= 2  # generation stops at the window
    assert policy_context_size(ScriptedPolicy(lambda c, t: "x")) is None


def test_bad_settings_in_config_json_name_the_field(stamped_dir, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(stamped_dir, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["workbench_agent"] = {"max_context_tokens": 8, "some_future_key": 1}
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="max_context_tokens"):
        read_model_settings(bad)
    cfg["workbench_agent"] = "compact"
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="table of agent settings"):
        read_model_settings(bad)
    cfg["workbench_agent"] = {"prompt": "compact", "some_future_key": 1}  # unknown keys: skipped
    (bad / "config.json").write_text(json.dumps(cfg))
    assert read_model_settings(bad) == {"prompt": "compact"}


def test_serve_model_passes_settings_and_window_to_openai_clients(stamped_dir):
    served = TransformersPolicy(stamped_dir, device="cpu")
    with ModelServer(policy=served) as server:
        [card] = httpx.get(server.url + "/v1/models").json()["data"]
        assert card["max_model_len"] == 2048 and card["workbench_agent"]["prompt"] == "compact"
        remote = OpenAIPolicy(server.url + "/v1")
        assert remote.context_size == 2048 and remote.agent_settings == served.agent_settings
        assert remote.describe()["context_size"] == 2048
        named = OpenAIPolicy(server.url, model=card["id"], tokenizer=str(stamped_dir))
        assert named.context_size == 2048
        ids = remote.codec.chat([{"role": "user", "content": "hi"}])
        [out] = asyncio.run(remote.generate([ids], SamplingParams(max_new_tokens=3, temperature=0)))
        assert 1 <= len(out.token_ids) <= 3


def test_serve_model_cli_says_which_settings_it_serves(stamped_dir):
    """The real command in a subprocess: it prints the settings, then serves them."""
    import os
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "serve-model",
            str(stamped_dir),
            "--port",
            str(port),
            "--device",
            "cpu",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    try:
        first = proc.stdout.readline()
        assert "agent settings from the model" in first and "prompt='compact'" in first
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                card = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).json()["data"][0]
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert card["workbench_agent"]["max_context_tokens"] == 512
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
