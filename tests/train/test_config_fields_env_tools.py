"""TrainConfig's `tools` and `env` name a registered tool set and env source for the episodes (their runs through
`launch()` are in tests/notebooks/test_registrations_notebook.py); environment episodes run in the trainer."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.train import TrainConfig
from workbench.train.run import build_episodes


def test_env_episodes_run_in_the_trainers_process():
    with pytest.raises(ConfigError, match="executor='local'"):
        TrainConfig(env="openenv:x.y:Z", executor="ray", episode_kind="nbagent")


def test_an_env_spec_builds_environment_episodes_and_an_unknown_one_says_which_forms_exist():
    from workbench.envs.episodes import EnvEpisodes
    from workbench.envs.source import register_env_source

    class Source:
        name = "games:one"

        def action_schema(self):
            return {"properties": {"text": {"type": "string"}}, "required": ["text"]}

        async def open(self): ...

    register_env_source("games:", lambda spec: Source())
    runner = build_episodes(TrainConfig(env="games:one", max_turns=3))
    assert isinstance(runner, EnvEpisodes) and runner.source.name == "games:one" and runner.max_turns == 3
    with pytest.raises(ConfigError, match="games:"):
        build_episodes(TrainConfig(env="nope:x"))
