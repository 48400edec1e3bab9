"""The caller's registrations reach the processes it launches: `carry()` in one interpreter, `install_carried()` in a
fresh one, and every kind resolves there; what cannot be carried is refused with its name and why."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench import registrations
from workbench.errors import ConfigError

# Run as a script, so everything it defines lives in `__main__`, as in a notebook cell: carried by value.
PARENT = '''
import sys
from dataclasses import dataclass

import torch

from workbench.envs.source import InProcessOpenEnv, register_env_source
from workbench.policies import ScriptedPolicy, register_backend, register_scripted
from workbench.registrations import carry
from workbench.resolve import register_tool_set
from workbench.rewards import reward
from workbench.tools import ToolRegistry, tool
from workbench.train.estimators import Advantages, Estimator, estimator, param

SCALE = 2.0  # a global of __main__: travels with the functions that read it


@estimator("doubled_main")
@dataclass(frozen=True)
class Doubled(Estimator):
    weight: float = param(SCALE, "multiplies the reward")

    def advantages(self, batch):
        return Advantages(torch.tensor(batch.rewards()) * self.weight)


@reward("main.steps")
def steps(traj, ctx) -> float:
    return SCALE * len(traj.steps)


@tool
def shout(text: str) -> str:
    """`text` in capitals."""
    return text.upper()


register_backend("main_backend", lambda arg, **kw: ScriptedPolicy.from_turns([arg * int(SCALE)], name="main"))
register_scripted("main_script", lambda **kw: ScriptedPolicy.from_turns(["hi"], name="main-script"))
register_tool_set("main_tools", lambda **paths: ToolRegistry([shout]))
register_env_source("maingame:", lambda spec: spec.upper())
sys.stdout.buffer.write(carry())
'''

CHILD = """
import sys

from workbench.envs.source import load_env_source
from workbench.policies import load_policy
from workbench.registrations import install_carried
from workbench.resolve import load_tool_set, resolve_policy
from workbench.rewards import get_reward
from workbench.train.config import TrainConfig
from workbench.train.estimators import estimator_names

done = install_carried(open(sys.argv[1], "rb").read())
print(sorted(done))
print(TrainConfig(estimator="doubled_main").make_estimator().params())
print(get_reward("main.steps").fn.__module__, get_reward("em").name)
print(load_policy("main_backend:ab").name, resolve_policy("scripted:main_script").name)
print(load_tool_set("main_tools").names)
print(load_env_source("maingame:x"), "grpo" in estimator_names(), resolve_policy("scripted").name)
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=300)


@pytest.mark.slow
def test_every_kind_made_in_main_resolves_in_a_fresh_process(tmp_path: Path) -> None:
    parent = _python(PARENT)
    assert parent.returncode == 0, parent.stderr.decode()
    payload = tmp_path / "registrations.bin"
    payload.write_bytes(parent.stdout)
    child = _python(CHILD, str(payload))
    assert child.returncode == 0, child.stderr.decode()
    lines = child.stdout.decode().splitlines()
    assert lines[0] == str(
        sorted(
            [
                "estimator doubled_main",
                "reward main.steps",
                "policy backend main_backend",
                "scripted policy main_script",
                "tool set main_tools",
                "env source maingame:",
            ]
        )
    )
    assert lines[1] == "{'weight': 2.0}"  # the class came by value, with its default read from __main__'s SCALE
    assert lines[2] == "__main__ em"
    assert lines[3] == "main main-script"
    assert lines[4] == "['shout', 'submit_final_answer']"
    assert lines[5] == "MAINGAME:X True world-solver"  # the child's own built-ins stay


@pytest.fixture()
def own_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's registrations only (and none left behind for later launches in the session)."""
    monkeypatch.setattr(registrations, "_MADE", {})
    monkeypatch.setattr(registrations, "_MISSING", {})


def test_a_registration_holding_a_lock_is_named_with_why(own_log: None) -> None:
    """strict: refused at once. Otherwise it travels as its reason, the others arrive, and looking up its
    name where it did not arrive says why (recorded without registering, as a parent's would be)."""
    from workbench.policies import load_policy, register_backend
    from workbench.resolve import register_tool_set

    lock = threading.Lock()

    def locked_backend(arg: str, **kwargs: object) -> object:
        with lock:
            return arg

    registrations.record("policy backend", "locked_elsewhere", locked_backend, register_backend)
    registrations.record("tool set", "fine_elsewhere", _no_tools, register_tool_set)
    with pytest.raises(ConfigError) as err:
        registrations.carry(strict=True)
    text = str(err.value)
    assert "policy backend registration 'locked_elsewhere'" in text and "locked_backend" in text
    assert "cannot pickle '_thread.lock'" in text and "a lock, an open file, socket or client" in text
    assert "--plugin MODULE" in text
    assert registrations.install_carried(registrations.carry()) == ["tool set fine_elsewhere"]
    assert list(registrations.missing()) == ["policy backend locked_elsewhere"]
    with pytest.raises(ConfigError) as err:
        load_policy("locked_elsewhere:x")
    text = str(err.value)
    assert "unknown policy backend 'locked_elsewhere'" in text
    assert "registration 'locked_elsewhere' of the process that launched this one could not be copied" in text
    assert "cannot pickle '_thread.lock'" in text


def _no_tools(**paths: object) -> object:
    return None


def test_a_module_the_child_cannot_import_is_named(own_log: None, tmp_path: Path, monkeypatch) -> None:
    from workbench.resolve import load_tool_set, register_tool_set

    (tmp_path / "lab_tools_somewhere.py").write_text("def factory(**paths):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lab_tools_somewhere

    registrations.record("tool set", "lab_elsewhere", lab_tools_somewhere.factory, register_tool_set)
    payload = registrations.carry(strict=True)  # by reference: the module is importable here
    del sys.modules["lab_tools_somewhere"]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    assert registrations.install_carried(payload) == []
    with pytest.raises(ConfigError, match=r"could not be rebuilt in this process.*lab_tools_somewhere.*importable"):
        load_tool_set("lab_elsewhere")


def test_built_ins_are_not_carried_and_a_later_registration_replaces(own_log: None) -> None:
    from workbench.policies import register_backend
    from workbench.train.estimators import estimator_names

    assert "grpo" in estimator_names()
    register_backend("twice", lambda arg, **kw: "first")
    register_backend("twice", lambda arg, **kw: "second")
    [made] = registrations.registrations()
    assert (made.kind, made.name, made.value("")) == ("policy backend", "twice", "second")
    registrations.record("tool set", "t", "value", _note)  # a module-level installer: carried by reference
    assert registrations.install_carried(registrations.carry()) == ["policy backend twice", "tool set t"]
    assert INSTALLED == [("t", "value")]


INSTALLED: list[tuple[str, object]] = []


def _note(name: str, value: object) -> None:
    INSTALLED.append((name, value))
