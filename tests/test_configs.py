"""Every config class shares one idiom (`workbench.configfile.Config`): help on each field, `to_dict`
round-trips through TOML, a wrongly typed value is a ConfigError naming the field (and its parent when
nested), `--set` overrides reach nested fields."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import pytest

from workbench.agent.config import AgentConfig
from workbench.configfile import Config, check_value, parse_overrides, to_toml
from workbench.demo.config import PRESETS, DemoConfig
from workbench.errors import ConfigError
from workbench.evolve.asearcher import ASearcherConfig
from workbench.evolve.config import Agent0Config, DrZeroConfig
from workbench.evolve.experiment import EvolveExperiment
from workbench.sandbox.profile import Limits, SandboxProfile, load_profile
from workbench.search.build import BuildConfig
from workbench.synth.config import SynthesisConfig
from workbench.train.config import TrainConfig

# every config class, with the fewest settings that make a valid one
CONFIGS: dict[type[Config], dict[str, Any]] = {
    AgentConfig: {},
    TrainConfig: {"estimator": "adpo", "estimator_params": {"adpo": {"p_low": 0.25}}},
    DrZeroConfig: {},
    Agent0Config: {},
    ASearcherConfig: {},
    EvolveExperiment: {"corpus": "runs/world/corpus.jsonl", "train": {"max_steps": 1}},
    DemoConfig: {},
    SynthesisConfig: {},
    BuildConfig: {},
    SandboxProfile: {},
    Limits: {},
}


def _all_subclasses(cls: type) -> set[type]:
    return {s for c in cls.__subclasses__() for s in {c, *_all_subclasses(c)}}


def test_every_config_class_is_walked():
    concrete = {c for c in _all_subclasses(Config) if not getattr(c, "__abstractmethods__", None)}
    concrete = {c for c in concrete if c.__module__.startswith("workbench.")}
    assert concrete <= set(CONFIGS), f"add {concrete - set(CONFIGS)} to CONFIGS"


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_has_help(cls: type[Config]):
    helps = cls.fields_help()
    assert set(helps) >= set(cls.config_types())
    assert [name for name, text in helps.items() if not text.strip()] == []


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_to_dict_round_trips_through_toml(cls: type[Config]):
    config = cls.from_dict(CONFIGS[cls])
    text = to_toml(config.to_dict())
    assert cls.from_dict(tomllib.loads(text)) == config


def _wrong_value(tp: Any) -> Any:
    """A value no field of annotation `tp` accepts."""
    origin = get_origin(tp)
    if origin is Literal:
        return "not-one-of-them"
    if tp is str or ((origin is Union or str(origin) == "<class 'types.UnionType'>") and str in get_args(tp)):
        return 3
    if tp in (int, float, bool) or (origin is not None and {int, float} & set(get_args(tp))):
        return "x"
    return 5  # lists, tuples, tables, nested configs


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_a_wrongly_typed_value_is_a_config_error_naming_the_field(cls: type[Config]):
    for name, tp in cls.config_types().items():
        if tp is Any:
            continue
        with pytest.raises(ConfigError, match=rf"{cls.__name__}\.{name}\b"):
            cls.from_dict({**CONFIGS[cls], name: _wrong_value(tp)})


@pytest.mark.parametrize(
    "cls, data, named",
    [
        (SandboxProfile, {"limits": {"memory_mb": "lots"}}, "SandboxProfile.limits.memory_mb"),
        (TrainConfig, {"estimator_params": {"adpo": {"p_low": "low"}}}, "TrainConfig.estimator_params.adpo.p_low"),
        (DrZeroConfig, {"proposer_agent": {"max_steps": "6"}}, "DrZeroConfig.proposer_agent.max_steps"),
        (DrZeroConfig, {"hop_weights": {"one": 1.0}}, "DrZeroConfig.hop_weights"),
        (TrainConfig, {"report_to": ["tensorboard", 3]}, r"TrainConfig.report_to\[1\]"),
    ],
)
def test_a_nested_error_names_the_parent(cls: type[Config], data: dict[str, Any], named: str):
    with pytest.raises(ConfigError, match=named):
        cls.from_dict(data)


def test_the_issue_examples():
    with pytest.raises(ConfigError, match=r"TrainConfig\.max_steps: '10' is not an int.*unquoted"):
        TrainConfig.from_dict({"max_steps": "10"})  # was a bare TypeError
    with pytest.raises(ConfigError, match=r"TrainConfig\.learning_rate: 'fast' is not a float"):
        TrainConfig(learning_rate="fast")  # keywords are checked as a file's values are (was accepted)
    with pytest.raises(ConfigError, match=r"write 1\.0e-6"):
        TrainConfig.from_dict({"learning_rate": "1e-6"})  # YAML 1.1 reads 1e-6 as text
    assert TrainConfig(learning_rate=1).learning_rate == 1.0 and isinstance(
        TrainConfig(learning_rate=1).learning_rate, float
    )


def test_set_text_is_parsed_by_the_field_type():
    config = TrainConfig().with_overrides(
        ["max_steps=10", "run_id=123", "learning_rate=1e-5", "bf16=true", "estimator_params.adpo.p_low=0.2"]
    )
    assert (config.max_steps, config.run_id, config.learning_rate, config.bf16) == (10, "123", 1e-5, True)
    assert config.estimator_params == {"adpo": {"p_low": 0.2}}
    profile = SandboxProfile().with_overrides(["limits.memory_mb=2048", "ro_binds=[]"])
    assert profile.limits.memory_mb == 2048 and profile.limits.disk_mb == Limits().disk_mb
    assert parse_overrides(DrZeroConfig, ["proposer_agent.max_steps=3"]) == {"proposer_agent": {"max_steps": 3}}
    assert DrZeroConfig().with_overrides({"proposer_agent.max_steps": 3}).proposer_agent["max_context_tokens"] == 8192
    with pytest.raises(ConfigError, match="FIELD=VALUE"):
        TrainConfig().with_overrides(["max_steps"])
    with pytest.raises(ConfigError, match=r"TrainConfig\.max_steps: 'ten'"):
        TrainConfig().with_overrides(["max_steps=ten"])


def test_an_agent_config_copy_keeps_only_what_was_set():
    """with_overrides must not mark every field as set: a model's own settings fill the rest."""
    config = AgentConfig(max_steps=3).with_overrides(["temperature=0"])
    assert config.model_fields_set == {"max_steps", "temperature"}


def test_every_config_loads_from_toml_yaml_and_json(tmp_path: Path):
    toml = tmp_path / "c.toml"
    toml.write_text("[train]\nmax_steps = 3\n")
    yaml = tmp_path / "c.yaml"
    yaml.write_text("agent:\n  max_steps: 4\n")
    json_path = tmp_path / "c.json"
    json_path.write_text('{"limits": {"memory_mb": 512}, "tmp_size_mb": 128}')
    assert TrainConfig.from_file(toml).max_steps == 3 and TrainConfig.load(toml, max_steps=2).max_steps == 2
    assert AgentConfig.from_file(yaml).max_steps == 4
    profile = SandboxProfile.from_file(json_path)
    assert (profile.name, profile.limits.memory_mb) == ("c", 512)
    assert load_profile("default") == SandboxProfile.from_file(
        Path(load_profile.__globals__["PROFILES_DIR"]) / "default.toml"
    )


def test_demo_cache_keys_are_unchanged():
    """The demo's caches are named by DemoConfig.key(); these hashes were computed with the DemoConfig of
    before the Config base (57ebfae~1), for the default config."""
    config = DemoConfig()
    # fields added later (for --model smollm2), whose defaults keep make demo's behaviour
    added = {
        "sft_batch_size",
        "sft_lora_r",
        "rl_micro_batch",
        "max_new_tokens",
        "zero_shot_steps",
        "compact_teacher",
        "rl_concurrency",
        "rl_token_budget",
        "rl_gradient_checkpointing",
        "rl_lora_r",
        "keep_notepads",
        "proposer_rl_micro_batch",
        "proposer_style",
        "mode",  # --mode agent0; the default, drzero, is make demo's
        "agent0_p_low",
        "agent0_p_high",
        "agent0_reward",
        "check_prompts",  # --proposer learned's closing checks; make demo's proposer is scripted
        "check_samples",
    }
    every = [f.name for f in dataclasses.fields(DemoConfig) if f.name not in added]
    assert config.key(*every) == "f4f7e3e578"
    assert config.key("seed", "world_size", "vocab_size", "n_layer", "n_embd", "n_head") == "9c2bd1e3d5"
    assert config.key("seed", "world_size", "vocab_size", "teacher_tasks") == "7e9aa7a879"
    proposer = ("seed", "world_size", "proposer_teacher_tasks", "proposer_hop_weights", "proposer_context_tokens")
    assert config.key(*proposer, "proposer_max_new_tokens", "max_steps", "proposer_vocab_size") == "cfb7f37885"
    for name in PRESETS:  # the presets still make valid configs
        DemoConfig.preset(name)


def test_check_value_covers_the_annotation_forms():
    assert check_value(dict[int, float], {"1": 2}, "x") == {1: 2.0}  # TOML/JSON keys are text
    assert check_value(tuple[str, ...], ["a"], "x") == ("a",)
    assert check_value(int | None, None, "x") is None
    with pytest.raises(ConfigError, match=r"x: True is not an int"):
        check_value(int, True, "x")
    with pytest.raises(ConfigError, match=r"x\.limits: 3 is not a table of Limits fields"):
        check_value(SandboxProfile, {"limits": 3}, "x")


@pytest.mark.parametrize(
    "argv, cls",
    [
        (["run", "--help-config"], AgentConfig),
        (["eval", "--help-config"], AgentConfig),
        (["index", "build", "--help-config"], BuildConfig),
        (["train", "--help-config"], TrainConfig),
        (["evolve", "--help-config"], DrZeroConfig),
    ],
)
def test_every_command_that_takes_a_config_lists_its_fields(argv: list[str], cls: type[Config], capsys):
    from workbench.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:  # --help-config exits as --help does (required flags are not needed)
        code = exc.code
    out = capsys.readouterr().out
    assert code == 0
    assert [name for name, text in cls.fields_help().items() if name not in out or text.split("\n")[0] not in out] == []


def test_train_set_merges_into_nested_tables(tmp_path: Path):
    from workbench.cli.train import load_config
    from workbench.configfile import parse_overrides

    path = tmp_path / "train.toml"
    path.write_text('[train]\nestimator = "adpo"\n[train.estimator_params.adpo]\np_low = 0.25\n')
    config = load_config(str(path), None, parse_overrides(TrainConfig, ["estimator_params.adpo.p_high=0.9"]))
    assert config.estimator_params == {"adpo": {"p_low": 0.25, "p_high": 0.9}}


def test_evolve_set_reaches_nested_tables_over_the_mode_defaults(tmp_path: Path):
    from workbench.cli.evolve import _parse_overrides

    path = tmp_path / "evolve.toml"
    path.write_text('corpus = "corpus.jsonl"\n[evolve]\niterations = 1\n')
    items = ["proposer_agent.max_steps=3", "run_id=12", "train.estimator_params.adpo.p_low=0.2"]
    job = EvolveExperiment.load(path, **_parse_overrides(items))
    config = job.evolve_config()
    assert config.proposer_agent == {"max_steps": 3, "max_context_tokens": 8192}  # the default's other key stays
    assert config.run_id == "12"  # text for a text field
    assert job.train_config().estimator_params == {"adpo": {"p_low": 0.2}}


def test_the_demo_takes_help_config_and_set(capsys, monkeypatch):
    from workbench.demo import DemoConfig
    from workbench.demo import __main__ as demo_main

    with pytest.raises(SystemExit) as exit_info:
        demo_main.main(["--help-config"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert [name for name in DemoConfig.fields_help() if name not in out] == []
    seen: list[DemoConfig] = []
    monkeypatch.setattr("workbench.demo.run_demo", lambda cfg, fresh: seen.append(cfg))
    assert demo_main.main(["--seed", "3", "--set", "n_layer=3", "--set", "run_dir=runs/x"]) == 0
    assert (seen[0].seed, seen[0].n_layer, seen[0].run_dir) == (3, 3, "runs/x")
    with pytest.raises(ConfigError, match="n_layer"):
        demo_main.main(["--set", "n_layer=many"])
