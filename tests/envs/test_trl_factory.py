"""NB-Agent as TRL 1.16's `environment_factory`: TRL's own schema extraction reads every tool, the tools run
in a sandboxed kernel and the host tools go through the gateway, and a real `GRPOTrainer` step on a tiny local
model resets one kernel per generation, with every kernel given back afterwards."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_procs import kernels_left

from workbench.agent.config import AgentConfig
from workbench.envs import EpisodeHost
from workbench.envs.trl import NBAgentToolEnv, environment_reward, tool_environment
from workbench.errors import ConfigError
from workbench.tools import ToolRegistry

TEXTS = ["What is the capital of France? Paris is the capital.", "Two plus two is four.", "def f(x): return x"] * 20


def capital(country: str) -> str:
    """The capital of a country, from the host's atlas."""
    return {"France": "Paris", "Japan": "Tokyo"}.get(country, "unknown")


@pytest.fixture()
def tool_env() -> Iterator[type[NBAgentToolEnv]]:
    host = EpisodeHost(tools=ToolRegistry([capital]), reward="em", agent=AgentConfig(max_steps=4), max_sessions=4)
    cls = tool_environment(host)
    yield cls
    cls.close_all()


def _tools_as_trl_sees_them(cls: type) -> list[str]:
    """What GRPOTrainer exposes: public functions of the class, but reset and get_reward."""
    found = inspect.getmembers(cls, predicate=inspect.isfunction)
    return [n for n, _ in found if n not in ("reset", "get_reward") and not n.startswith("_")]


def test_every_public_method_is_a_tool_with_a_schema(tool_env: type[NBAgentToolEnv]) -> None:
    from transformers.utils import get_json_schema

    env = tool_env()
    assert _tools_as_trl_sees_them(tool_env) == ["capital", "run_code", "submit_final_answer"]
    schemas = {n: get_json_schema(getattr(env, n))["function"] for n in _tools_as_trl_sees_them(tool_env)}
    assert schemas["capital"]["parameters"]["required"] == ["country"]
    assert schemas["run_code"]["parameters"]["properties"]["code"]["type"] == "string"


def test_an_episode_through_the_tools(tool_env: type[NBAgentToolEnv]) -> None:
    env = tool_env()
    with pytest.raises(ConfigError, match="reset"):
        env.run_code("1")
    assert env.reset(prompt=[{"role": "user", "content": "Capital of France?"}], answer="Paris") is None
    assert env.run_code("print(task)\nx = 6 * 7\nx") == "Capital of France?\n42"
    assert env.capital("France") == "'Paris'"
    assert environment_reward([env]) == [0.0]
    assert env.submit_final_answer("Paris") == "Final answer submitted: Paris"
    assert environment_reward([env]) == [1.0]
    traj = env.session.trajectory if env.session else None
    assert traj is not None and [c.name for c in traj.steps[1].host_calls] == ["capital"]
    env.reset(question="Capital of Japan?", answer="Tokyo")  # a fresh kernel: nothing carried over
    assert "NameError" in env.run_code("x")
    assert tool_env.host is not None and tool_env.host.stats()["in_use"] == 1
    more = [tool_env() for _ in range(3)]  # four in all: the host's kernels
    with pytest.raises(ConfigError, match="max_sessions"):
        tool_env()
    assert len(more) == 3


@pytest.mark.slow
def test_a_grpo_step_with_environment_factory(tool_env: type[NBAgentToolEnv], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from workbench.models.tiny import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny", TEXTS, vocab_size=320, n_layer=2, n_embd=32, n_head=2, seed=0)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = qwen2_5_chat_template  # a template TRL renders tool calls with
    rows = [
        {"prompt": [{"role": "user", "content": "Capital of France?"}], "answer": "Paris"},
        {"prompt": [{"role": "user", "content": "Capital of Japan?"}], "answer": "Tokyo"},
    ]
    resets: list[str] = []
    original = tool_env.reset

    def counting_reset(self: NBAgentToolEnv, **row: object) -> str | None:
        out = original(self, **row)
        resets.append(self.session.trajectory.task.question if self.session else "")
        return out

    monkeypatch.setattr(tool_env, "reset", counting_reset)
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=16,
        max_steps=1,
        learning_rate=1e-3,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(path),
        processing_class=tokenizer,
        reward_funcs=[environment_reward],
        args=config,
        train_dataset=Dataset.from_list(rows),
        environment_factory=tool_env,
    )
    trainer.train()
    assert trainer.state.global_step == 1
    assert sorted(resets) == sorted(["Capital of France?", "Capital of Japan?"] * 2)  # one kernel per generation
    assert all(isinstance(env, tool_env) for env in trainer.environments or [])
    assert any("reward" in entry for entry in trainer.state.log_history)
    host = tool_env.host
    assert host is not None
    tool_env.close_all()
    assert host.stats() == {"warm": 0, "in_use": 0, "started": 0}
    assert kernels_left() == []
