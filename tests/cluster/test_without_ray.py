"""Ray stays optional: nothing local imports it, and asking for it without the extra says what to install."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.cluster import PolicySpec, ToolsSpec
from workbench.errors import ConfigError


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_workbench_and_its_local_paths_never_import_ray():
    out = run_python(
        "import sys, workbench, workbench.cli, workbench.cluster, workbench.agent, workbench.agent.local, "
        "workbench.train.run, workbench.evolve, workbench.evaluate\n"
        "from workbench.cluster import ToolsSpec, PolicySpec\n"
        "from workbench.cluster.select import make_executor\n"
        "make_executor('local')\n"
        "print('ray' in sys.modules)"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_without_ray_local_episodes_run_and_ray_asks_for_the_extra():
    out = run_python(
        "import sys; sys.modules['ray'] = None  # as if the extra were not installed\n"
        "from workbench.agent.config import AgentConfig\n"
        "from workbench.agent.executor import make_jobs, run_jobs\n"
        "from workbench.cluster.select import make_executor\n"
        "from workbench.policies import ScriptedPolicy\n"
        "from workbench.trajectory import Task\n"
        "ex = make_executor('local', concurrency=1)\n"
        "p = ScriptedPolicy.from_turns(['<code>\\nsubmit_final_answer(str(6 * 7))\\n</code>'])\n"
        "[t] = run_jobs(ex, make_jobs([Task('t', 'six times seven?')], AgentConfig(max_steps=2)), p)\n"
        "ex.close()\n"
        "print(t.termination, t.final_answer)\n"
        "for make in (\n"
        "    lambda: make_executor('ray'),\n"
        "    lambda: __import__('workbench.cluster', fromlist=['x']).RayExecutor(),\n"
        "):\n"
        "    try:\n"
        "        make()\n"
        "    except Exception as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "submitted 42"
    assert len(lines) == 3
    for line in lines[1:]:
        assert line.startswith("ConfigError") and "pip install 'workbench[ray]'" in line


def test_unknown_executor_and_ray_options_without_ray_are_config_errors():
    from workbench.cluster.select import make_executor

    with pytest.raises(ConfigError, match="local, ray"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="--executor ray"):
        make_executor("local", ray_address="auto")


@settings(max_examples=200, deadline=None)
@given(name=st.text(min_size=1, max_size=40), value=st.text(max_size=40))
def test_a_spec_keyword_is_kept_or_refused_as_a_secret_never_anything_else(name, value):
    try:
        spec = ToolsSpec("workbench.resolve:load_search_tool", **{name: value})
    except ConfigError as exc:
        assert "env=" in str(exc) and any(
            w in name.lower() for w in ("key", "token", "secret", "pass", "credential", "auth")
        )
        return
    assert spec.kwargs == {name: value}
    assert pickle.loads(pickle.dumps(spec)).kwargs == {name: value}


@settings(max_examples=100, deadline=None)
@given(spec=st.text(max_size=60), var=st.text(max_size=20))
def test_any_policy_spec_text_builds_a_spec_or_says_what_a_spec_looks_like(spec, var):
    try:
        made = PolicySpec(spec, env={"api_key": var})
    except ConfigError as exc:
        assert "PolicySpec" in str(exc)
        return
    assert made.spec == spec and made.env == {"api_key": var}


def test_a_policy_holding_a_credential_is_not_sent_to_workers():
    from workbench.cluster.spec import policy_for_workers
    from workbench.policies import ScriptedPolicy

    class KeyedClient:  # as an OpenAIPolicy built with api_key=...
        headers: ClassVar[dict[str, str]] = {"Authorization": "Bearer sk-live"}

    with pytest.raises(ConfigError, match="PolicySpec"):
        policy_for_workers(KeyedClient())
    assert policy_for_workers("openai:http://gpu:8000/v1") == PolicySpec("openai:http://gpu:8000/v1")
    scripted = ScriptedPolicy.from_turns(["<code>\n1\n</code>"])
    assert policy_for_workers(scripted) is scripted  # no credential: it travels as it is
