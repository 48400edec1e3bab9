import math

import pytest

from workbench.errors import ConfigError
from workbench.rewards import RewardSpec, get_reward, list_presets, list_rewards, reward
from workbench.rewards.registry import _REGISTRY
from workbench.trajectory import Step, Task, Trajectory

TOML = """
name = "mine"
gate = ["asearcher.format"]
floor = 0.0
[[components]]
name = "em"
weight = 0.5
[[components]]
name = "f1"
key = "f1_unicode"
params = { normalizer = "unicode" }
"""

YAML = """
name: mine
gate: [asearcher.format]
floor: 0.0
components:
  - {name: em, weight: 0.5}
  - {name: f1, key: f1_unicode, params: {normalizer: unicode}}
"""


def _traj(answer):
    return Trajectory(task=Task("q", "Where?", ["Paris"]), steps=[Step(0, f"<answer>{answer}</answer>")])


def test_presets_for_every_seed():
    assert {"l0", "drzero_solver", "drzero_proposer", "agent0", "asearcher", "search_r1"} <= set(list_presets())
    for name in list_presets():
        assert RewardSpec.preset(name).name == name


def test_round_trips_json_toml_yaml(tmp_path):
    spec = RewardSpec.from_toml(TOML)
    assert RewardSpec.from_yaml(YAML) == spec
    assert RewardSpec.from_json(spec.to_json()) == spec
    for suffix, text in ((".toml", TOML), (".yaml", YAML), (".json", spec.to_json())):
        p = tmp_path / f"s{suffix}"
        p.write_text(text)
        assert RewardSpec.load(p) == spec
    assert spec.score(_traj("paris")) == {"em": 1.0, "f1_unicode": 1.0, "asearcher.format": 1.0, "total": 1.5}
    assert spec.score(_traj("Paris <answer>"))["total"] == 0.0  # format gate fails


@pytest.mark.parametrize(
    "data,problem",
    [
        ({"name": "x", "components": [{"name": "emm"}]}, "unknown reward component 'emm'"),
        ({"name": "x", "components": [{"name": "em", "weight": "heavy"}]}, "components.0.weight"),
        ({"name": "x", "components": [{"name": "em", "weight": math.inf}]}, "finite"),
        ({"name": "x", "components": [{"name": "em", "params": {"normaliser": "x"}}]}, "normalizer"),
        ({"name": "x", "components": [{"name": "em"}, {"name": "em"}]}, "distinct `key`"),
        ({"name": "x", "components": []}, "components"),
        ({"name": "x", "components": [{"name": "em"}], "gate": ["nope"]}, "unknown reward"),
        ({"name": "x", "components": [{"name": "em"}], "typo": 1}, "typo"),
    ],
)
def test_bad_specs_raise_config_errors_that_name_the_problem(data, problem):
    with pytest.raises(ConfigError, match=problem):
        RewardSpec.from_dict(data)


def test_bad_files_and_presets(tmp_path):
    with pytest.raises(ConfigError, match="known: "):
        RewardSpec.preset("l1")
    (tmp_path / "s.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"\.toml"):
        RewardSpec.load(tmp_path / "s.txt")
    (tmp_path / "s.toml").write_text("name = ")
    with pytest.raises(ConfigError, match=r"s\.toml.*TOML"):
        RewardSpec.load(tmp_path / "s.toml")


def test_register_a_custom_component():
    @reward("test.brevity")
    def brevity(traj, ctx, *, max_steps: int = 8) -> float:
        """1 for short episodes."""
        return max(0.0, 1 - len(traj.steps) / max_steps)

    try:
        assert "test.brevity" in list_rewards()
        comp = get_reward("test.brevity")
        assert comp.params == {"max_steps": 8} and comp.description == "1 for short episodes."
        assert comp(_traj("x"), max_steps=4) == 0.75
        with pytest.raises(ConfigError, match="max_steps"):
            comp(_traj("x"), steps=4)
        spec = RewardSpec(name="b", components=[{"name": "test.brevity", "params": {"max_steps": 2}}])
        assert spec.score(_traj("x"))["total"] == 0.5
    finally:
        _REGISTRY.pop("test.brevity", None)
