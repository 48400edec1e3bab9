"""`--plugin MODULE` on every command that resolves names: the command parses it, `workbench` imports the
module and calls its register() before the command runs, and each kind the plugin registers resolves."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from workbench.cli import build_parser, main
from workbench.errors import ConfigError

# The commands that resolve a name (a policy, tool set, reward, estimator, env source, model). A new
# serving command (`serve-*`) is checked without being listed.
RESOLVING = {
    "run": ("workbench.cli.agent", "_run", ["--out", "OUT"]),
    "eval": ("workbench.cli.evaluate", "_run", []),
    "train": ("workbench.cli.train", "_run", []),
    "evolve": ("workbench.cli.evolve", "_run", []),
    "serve-env": ("workbench.cli.envs", "_serve", []),
    "serve-model": ("workbench.cli.policies", "_serve", ["MODEL"]),
    "serve-search": ("workbench.cli.search", "_serve", ["--index", "INDEX"]),
}

PLUGIN = """
from dataclasses import dataclass

import torch

from workbench.envs.source import register_env_source
from workbench.policies import ScriptedPolicy, register_backend
from workbench.resolve import register_tool_set
from workbench.rewards import reward
from workbench.tools import ToolRegistry
from workbench.train.estimators import Advantages, Estimator, estimator


@dataclass(frozen=True)
class Halved(Estimator):
    def advantages(self, batch):
        return Advantages(torch.tensor(batch.rewards()) / 2)


def steps(traj, ctx) -> float:
    return float(len(traj.steps))


def register() -> None:
    estimator("plug_halved")(Halved)
    reward("plug.steps")(steps)
    register_backend("plug_backend", lambda arg, **kw: ScriptedPolicy.from_turns([arg], name="plug:" + arg))
    register_tool_set("plug_tools", lambda **paths: ToolRegistry([]))
    register_env_source("plugenv:", lambda spec: spec)
"""


@pytest.fixture()
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "cli_plug_module.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "cli_plug_module"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_command_that_resolves_names_takes_plugin() -> None:
    commands = _subcommands()
    checked = set(RESOLVING) | {name for name in commands if name.startswith("serve")}
    missing = [name for name in sorted(checked) if "--plugin" not in commands[name]._option_string_actions]
    assert missing == [], "call workbench.cli.plugins.add_plugin_argument(parser) in these commands"
    args = commands["train"].parse_args(["--plugin", "a", "--plugin", "b.c"])
    assert args.plugin == ["a", "b.c"]


def _resolve_everything(args: argparse.Namespace) -> int:
    """What a command does first: resolve the names it was given. Each fails unless the plugin was loaded."""
    from workbench.envs.source import load_env_source
    from workbench.resolve import load_tool_set, resolve_policy
    from workbench.rewards import get_reward
    from workbench.train.config import TrainConfig

    assert TrainConfig(estimator="plug_halved").make_estimator().name == "plug_halved"
    assert get_reward("plug.steps").name == "plug.steps"
    assert resolve_policy("plug_backend:hi").name == "plug:hi"
    assert load_tool_set("plug_tools").names == ["submit_final_answer"]
    assert load_env_source("plugenv:x") == "plugenv:x"
    print(f"resolved for {args.command}")
    return 0


@pytest.mark.parametrize("command", sorted(RESOLVING))
def test_each_command_loads_its_plugins_before_it_runs(command, plugin, monkeypatch, capsys) -> None:
    module, handler, required = RESOLVING[command]
    monkeypatch.setattr(importlib.import_module(module), handler, _resolve_everything)
    assert main([command, *required, "--plugin", plugin]) == 0
    assert f"resolved for {command}" in capsys.readouterr().out


def test_train_resolves_a_plugin_estimator_from_the_config(tmp_path, monkeypatch, capsys) -> None:
    """The real command: without the plugin, the config's estimator is refused while the config is read;
    with it the config resolves and the run goes on (to the missing model, where it stops)."""
    (tmp_path / "train_only_plug.py").write_text(
        PLUGIN.replace("def register() -> None:", "def _all() -> None:")
        + "\n\ndef register() -> None:\n    estimator('plug_train_only')(Halved)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "tasks.jsonl").write_text('{"id": "a", "question": "q?", "golden_answers": ["x"]}\n')
    config = tmp_path / "train.toml"
    config.write_text(
        f'model_path = "{tmp_path / "no-model"}"\ntasks_path = "{tmp_path / "tasks.jsonl"}"\n'
        f'output_dir = "{tmp_path / "run"}"\nestimator = "plug_train_only"\n'
    )
    assert main(["train", str(config), "--foreground"]) == 1
    assert "'plug_train_only' is not a registered estimator" in capsys.readouterr().err
    assert main(["train", str(config), "--foreground", "--plugin", "train_only_plug"]) == 1
    err = capsys.readouterr().err
    assert "not a registered estimator" not in err and "no-model" in err


def test_a_bad_plugin_names_the_fix(capsys) -> None:
    assert main(["serve-env", "--plugin", "json"]) == 1
    assert "--plugin json: the module has no register() function" in capsys.readouterr().err
    from workbench.cli.plugins import load_plugins

    with pytest.raises(ConfigError, match="PYTHONPATH"):
        load_plugins(["no_such_plugin_module_here"])
