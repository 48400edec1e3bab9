"""`resolve_reward`: whatever a config, CLI flag or caller names, as an object with `.score(traj)`.

resolve_reward("l0")                       # a preset (list_presets())
resolve_reward("em")                       # a single registered component (list_rewards())
resolve_reward("rewards/mine.toml")        # a spec file (.toml / .yaml / .json)
resolve_reward('{"name": "f1", "components": [{"name": "f1"}]}')
resolve_reward(my_spec) / resolve_reward(lambda traj: 1.0)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workbench.contracts import Scorer
from workbench.errors import ConfigError
from workbench.registrations import why_missing
from workbench.rewards.registry import list_rewards
from workbench.rewards.spec import RewardSpec, list_presets
from workbench.trajectory import Trajectory

ALIASES = {"exact_match": "em"}


RewardFunction = Callable[[Trajectory], float | dict[str, float]]
"""A plain function scoring one trajectory: its total, or a dict of rewards with a "total"."""


class CallableReward:
    """A plain function `traj -> float | dict` as a scorer."""

    def __init__(self, fn: RewardFunction) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "reward")

    def score(self, traj: Trajectory) -> dict[str, float]:
        out = self.fn(traj)
        return dict(out) if isinstance(out, dict) else {"total": float(out)}


def resolve_reward(spec: str | Scorer | RewardFunction) -> Scorer:
    """See the module docstring. Unknown names list what exists."""
    if hasattr(spec, "score"):
        return spec
    if callable(spec):
        return CallableReward(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(
            "reward: give a preset or component name, a spec file or JSON, or an object with .score(traj)"
        )
    text = spec.strip()
    if text.startswith("{"):
        return RewardSpec.from_json(text)
    if Path(text).suffix in (".toml", ".yaml", ".yml", ".json") or Path(text).is_file():
        return RewardSpec.load(text)
    if text in list_presets():
        return RewardSpec.preset(text)
    component = ALIASES.get(text, text)
    if component in list_rewards():
        return RewardSpec(name=text, components=[{"name": component}])
    raise ConfigError(
        f"unknown reward {text!r}: presets are {', '.join(sorted(list_presets()))}; "
        f"components are {', '.join(sorted(list_rewards()))}" + why_missing("reward", component)
    )


__all__ = ["CallableReward", "RewardFunction", "resolve_reward"]
