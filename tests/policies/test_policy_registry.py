import builtins

import pytest

from workbench.errors import ConfigError, PolicyError
from workbench.policies import ScriptedPolicy, TransformersPolicy, load_policy, register_scripted
from workbench.policies.registry import _SCRIPTED


@pytest.fixture
def clean_registry():
    saved = dict(_SCRIPTED)
    _SCRIPTED.clear()
    yield
    _SCRIPTED.clear()
    _SCRIPTED.update(saved)


def test_scripted_resolves_default_and_names(clean_registry):
    register_scripted("default", lambda: ScriptedPolicy.from_turns(["a"], name="dflt"))
    register_scripted("echo", lambda **kw: ScriptedPolicy(lambda ctx, t: ctx, **kw))
    assert load_policy("scripted").name == "dflt"
    assert load_policy("scripted:echo", name="e").name == "e"


def test_unknown_scripted_name_lists_choices(clean_registry):
    register_scripted("echo", lambda: ScriptedPolicy.from_turns(["a"]))
    with pytest.raises(ConfigError, match="scripted:echo") as err:
        load_policy("scripted:nope")
    assert "register_scripted" in str(err.value)


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("", "choices"),
        ("bogus:x", "choices"),
        ("transformers", "needs a MODEL"),
        ("openai:", "needs a URL"),
        ("openai:localhost:8000", "http://"),
    ],
)
def test_bad_specs(spec, needle):
    with pytest.raises(ConfigError, match=needle):
        load_policy(spec)


def test_transformers_spec(tiny_model_dir):
    policy = load_policy(f"transformers:{tiny_model_dir}", device="cpu")
    assert isinstance(policy, TransformersPolicy)
    assert policy.describe()["model_path"] == str(tiny_model_dir)


def test_vllm_absent_gives_install_hint(monkeypatch):
    real_import = builtins.__import__

    def no_vllm(name, *args, **kwargs):
        if name == "vllm" or name.startswith("vllm."):
            raise ImportError("No module named 'vllm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_vllm)
    with pytest.raises(PolicyError, match=r"pip install 'workbench\[gpu\]'") as err:
        load_policy("vllm:/models/some-model")
    assert "TransformersPolicy" in str(err.value) and "OpenAIPolicy" in str(err.value)
    assert isinstance(err.value.__cause__, ImportError)


def test_cli_registers_serve_model():
    import argparse

    from workbench.cli.policies import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve-model", "runs/tiny", "--port", "9001"])
    assert (args.path, args.host, args.port, args.func.__name__) == ("runs/tiny", "127.0.0.1", 9001, "_serve")
