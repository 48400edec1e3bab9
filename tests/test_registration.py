"""Explicit registration: a policy backend and a tool set registered from this file alone are named
on `workbench run`'s command line, and importing workbench registers nothing by itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.policies import Policy, ScriptedPolicy, load_policy, register_backend
from workbench.resolve import load_tool_set, register_tool_set, resolve_policy, tool_set_names
from workbench.store import Store
from workbench.tools import ToolRegistry, tool

VAULT_CODES = {"north": "XK-7", "south": "QJ-2"}


@tool
def vault_code(vault: str) -> str:
    """The door code of one vault."""
    return VAULT_CODES[vault]


def vault_tools(**_: object) -> ToolRegistry:
    return ToolRegistry([vault_code])


def vault_agent(arg: str, **kwargs: object) -> Policy:
    """One turn: ask the host tool for vault ARG's code and submit it."""
    cell = f'<think>Ask for the code.</think>\n<code>\nsubmit_final_answer(vault_code("{arg}"))\n</code>'
    return ScriptedPolicy.from_turns([cell], name=f"vault-agent({arg})")


def test_a_backend_and_a_tool_set_from_this_file_run_through_the_cli(tmp_path: Path, capsys) -> None:
    """The task's gold answer is "QJ-2", which only the host tool knows: an exact-match reward of 1
    means the CLI built our backend from `vault_agent:south` and gave the kernel our `vault_code`."""
    register_backend("vault_agent", vault_agent)
    register_tool_set("vaults", vault_tools)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "v1", "question": "What is the south vault's code?", "golden_answers": ["QJ-2"]})
    )
    out = tmp_path / "run"
    argv = ["run", "--tasks", str(tasks), "--policy", "vault_agent:south", "--tools", "vaults", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "1 episodes, 1 submitted an answer" in printed
    assert "mean reward 1.000 (em" in printed
    with Store.open_readonly(out) as store:
        [traj] = list(store.iter_trajectories())
    assert (traj.final_answer, traj.termination, traj.rewards) == ("QJ-2", "submitted", {"em": 1.0, "total": 1.0})


def test_unknown_names_list_the_known_ones_and_say_how_to_register() -> None:
    with pytest.raises(ConfigError, match="register_tool_set") as err:
        load_tool_set("no_such_tools")
    assert "none" in str(err.value) and "search" in str(err.value)
    with pytest.raises(ConfigError, match="register_backend") as err:
        load_policy("no_such_backend:x")
    assert "transformers:MODEL" in str(err.value) and "openai:URL" in str(err.value)


def test_built_ins_are_found_without_importing_their_modules_first() -> None:
    assert {"none", "search"} <= set(tool_set_names())
    assert load_tool_set("none").names == ["submit_final_answer"]
    assert resolve_policy("scripted:coder").name == "world-coder"
    assert resolve_policy("scripted").name == "world-solver"


def test_bad_registrations_are_refused() -> None:
    with pytest.raises(ConfigError, match="identifier"):
        register_backend("not a name", vault_agent)
    with pytest.raises(ConfigError, match="identifier"):
        register_tool_set("two words", vault_tools)
    with pytest.raises(ConfigError, match="already registered"):
        register_tool_set("search", vault_tools, replace=False)


def test_importing_workbench_registers_nothing() -> None:
    """In a fresh interpreter, importing the packages leaves every registry empty until a lookup, and no
    registration is recorded to be carried (the built-in estimators are never recorded)."""
    code = """
import workbench, workbench.policies, workbench.resolve, workbench.rewards, workbench.worlds, workbench.synth
from workbench.policies import registry as policies
from workbench.rewards import registry as rewards
from workbench.envs import source as env_sources
from workbench.train import estimators  # registers its built-ins on import: they are not recorded to be carried
from workbench import registrations, resolve
print(len(policies._BACKENDS), len(policies._SCRIPTED), len(resolve._TOOL_SETS), len(rewards._REGISTRY),
      len(env_sources._SOURCES), len(registrations.registrations()))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0", "0", "0", "0", "0"]


def test_reward_components_register_explicitly() -> None:
    """Built-ins are found by the first lookup; a marked component of another layer (synth's) is
    registered by the code that uses it; an unmarked function is refused with the fix."""
    from workbench.rewards import get_reward, list_rewards, register_reward
    from workbench.synth.reward import synthesis_reward

    assert {"em", "f1", "l0.qa", "drzero.difficulty", "agent0.tool", "asearcher.f1", "llm_judge"} <= set(list_rewards())
    assert register_reward(synthesis_reward) is get_reward("synth.recorded")
    with pytest.raises(ConfigError, match=r"@workbench.rewards.reward"):
        register_reward(vault_tools)
    with pytest.raises(ConfigError, match=r"known: .*em.*Register your own"):
        get_reward("no.such.reward")


PLUGIN = '''
from workbench.policies import ScriptedPolicy, register_backend
from workbench.resolve import register_tool_set
from workbench.tools import ToolRegistry, tool


@tool
def shout(text: str) -> str:
    """`text` in capitals."""
    return text.upper()


def register() -> None:
    register_tool_set("shouting", lambda **paths: ToolRegistry([shout]))
    register_backend(
        "shouter",
        lambda arg, **kwargs: ScriptedPolicy.from_turns(
            [f"<think>Shout.</think>\\n<code>\\nsubmit_final_answer(shout({arg!r}))\\n</code>"]
        ),
    )
'''


def test_a_plugin_module_registers_for_the_shell_command(tmp_path: Path, monkeypatch, capsys) -> None:
    """`--plugin MODULE` imports MODULE and calls its register(): the way a shell `workbench run`
    names your own backend and tool set. The answer "HEY" comes from the plugin's host tool."""
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "s1", "question": "Shout hey.", "golden_answers": ["HEY"]}))
    argv = ["run", "--tasks", str(tasks), "--plugin", "my_plugin", "--policy", "shouter:hey", "--tools", "shouting"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    assert "mean reward 1.000 (em" in capsys.readouterr().out
    assert main([*argv, "--plugin", "json", "--out", str(tmp_path / "again")]) != 0
    assert "--plugin json: the module has no register() function" in capsys.readouterr().err
    assert main([*argv, "--plugin", "no_such_plugin_module", "--out", str(tmp_path / "again")]) != 0
    assert "PYTHONPATH" in capsys.readouterr().err
