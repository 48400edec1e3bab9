"""What the driver registers reaches the Ray kernel workers: a policy backend and a tool set defined inside a
test function (so nothing importable: carried by value) are built on the workers from their names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


def test_workers_build_a_backend_and_a_tool_set_registered_here(ray_cluster, tmp_path: Path, capsys) -> None:
    """The gold answer "QJ-2" is known only to the tool set's host tool, and the policy that calls it exists only
    in this function: an exact-match reward of 1 means both were rebuilt on a worker from their names."""
    from workbench.cli import main
    from workbench.policies import ScriptedPolicy, register_backend
    from workbench.resolve import register_tool_set
    from workbench.tools import ToolRegistry, tool

    codes = {"north": "XK-7", "south": "QJ-2"}

    @tool
    def vault_code(vault: str) -> str:
        """The door code of one vault."""
        return codes[vault]

    def vault_agent(arg: str, **kwargs: object) -> ScriptedPolicy:
        cell = f'<think>Ask.</think>\n<code>\nsubmit_final_answer(vault_code("{arg}"))\n</code>'
        return ScriptedPolicy.from_turns([cell], name=f"vault-agent({arg})")

    register_backend("vault_here", vault_agent)
    register_tool_set("vaults_here", lambda **paths: ToolRegistry([vault_code]))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "v1", "question": "The south vault's code?", "golden_answers": ["QJ-2"]}))
    _, cluster = ray_cluster
    argv = ["run", "--tasks", str(tasks), "--policy", "vault_here:south", "--tools", "vaults_here"]
    ray_flags = ["--executor", "ray", "--ray-address", cluster.address, "--ray-mode", "episode", "--concurrency", "1"]
    assert main([*argv, *ray_flags, "--out", str(tmp_path / "run")]) == 0
    assert "mean reward 1.000 (em" in capsys.readouterr().out
    with Store.open_readonly(tmp_path / "run") as store:
        [traj] = list(store.iter_trajectories())
    assert traj.final_answer == "QJ-2" and traj.lineage["worker"]["node"]
