"""`RewardSpec`: a named, serialisable weighted combination of registered reward components.

    spec = RewardSpec.preset("l0")
    spec.score(traj)      # {"l0.qa": 1.0, "l0.format": 0.5, "l0.code": 1.0, "total": 0.95}
    RewardSpec(name="mine", components=[{"name": "em"}, {"name": "f1", "weight": 0.5,
               "params": {"normalizer": "unicode"}}])
    RewardSpec.load("rewards/mine.toml")     # .toml, .yaml/.yml or .json

    # mine.toml
    name = "mine"
    gate = ["asearcher.format"]
    [[components]]
    name = "set_f1"
    weight = 1.0

total = `gate_fail` if any gate component is ≤ 0, else Σ weight·value (raised to `floor` when
set). Components are reported unweighted under their `key` (default: their name); gate
components are reported too. Group components see trajectories with the same task id; use
`score_many` (or `rescore`) so they see the whole group.

Per-turn rewards. `spec.score_steps(traj)` gives one reward per step, summing to the total:

    r_t = Σ_{per-step c} w_c·v_{c,t}  +  [t = T−1]·Σ_{other c} w_c·v_c

Per-step components (registered with `per_step=True`, e.g. L0's `l0.format`, `l0.code`) pay
each step's value on that step; every other component (the outcome) is paid on the last turn.
When a gate fails or the floor binds, the total is not a sum of parts, so it is paid on the last
turn alone: `[0, …, 0, total]`. A spec with no per-step components also gives `[0, …, 0, total]`.
Whenever a spec with per-step components scores a trajectory (`score`, `score_many`, `rescore`),
it sets each `Step.reward` to these values; training reads them from there.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.errors import ConfigError
from workbench.rewards.registry import RewardContext, get_reward
from workbench.trajectory import Trajectory


class Component(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="a registered reward name (see list_rewards())")
    weight: float = Field(1.0, description="multiplies the value in the total; 0 = report only")
    params: dict[str, Any] = Field(default_factory=dict, description="the component's params")
    key: str | None = Field(None, description="output key; defaults to name")

    @property
    def out(self) -> str:
        return self.key or self.name


class RewardSpec(BaseModel):
    """A reward as data: weighted, parameterised components combined into one score, stored with each score it gives.

    spec = RewardSpec.preset("l0")         # or RewardSpec.load("reward.toml") / model_validate(dict)
    rewards = spec.score(traj)             # component scores and the total
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="recorded with every score this spec gives")
    components: list[Component] = Field(min_length=1)
    gate: list[str] = Field(default_factory=list, description="components that must be > 0")
    gate_fail: float = Field(0.0, description="the total when a gate fails")
    floor: float | None = Field(None, description="lower bound of the total (paper max(0, ·))")
    description: str = ""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"reward spec {data.get('name', '?')!r} is invalid: {problems}") from None
        self._check()

    def _check(self) -> None:
        seen: set[str] = set()
        for c in self.components:
            comp = get_reward(c.name)  # ConfigError naming the unknown component
            if not math.isfinite(c.weight):
                raise ConfigError(f"reward spec {self.name!r}: weight of {c.name!r} is {c.weight}; use a finite number")
            unknown = set(c.params) - set(comp.params)
            if unknown:
                raise ConfigError(
                    f"reward spec {self.name!r}: {c.name!r} has no param(s) "
                    f"{sorted(unknown)}; its params are {sorted(comp.params) or 'none'}"
                )
            if c.out in seen or c.out == "total":
                raise ConfigError(
                    f"reward spec {self.name!r}: output key {c.out!r} repeats; give "
                    "one of the components a distinct `key`"
                )
            seen.add(c.out)
        for g in self.gate:
            if g not in seen:
                get_reward(g)

    # -- scoring ------------------------------------------------------------------------------
    @property
    def per_step(self) -> bool:
        """Whether any component pays per step (then scoring sets `Step.reward`)."""
        return any(get_reward(c.name).per_step for c in self.components)

    def score(self, traj: Trajectory, ctx: RewardContext | None = None) -> dict[str, float]:
        """Every component's value and "total" for one trajectory (sets `Step.reward` when the
        spec has per-step components; see the module docstring)."""
        return self._evaluate(traj, ctx)[0]

    def score_steps(self, traj: Trajectory, ctx: RewardContext | None = None) -> list[float]:
        """One reward per step (len == len(traj.steps)), summing to the total; the rule is in
        the module docstring."""
        return self._evaluate(traj, ctx)[1]

    def _evaluate(self, traj: Trajectory, ctx: RewardContext | None) -> tuple[dict[str, float], list[float]]:
        ctx = ctx or RewardContext.for_one(traj)
        out: dict[str, float] = {}
        per_step: dict[str, list[float]] = {}
        for c in self.components:
            comp = get_reward(c.name)
            if comp.per_step:
                per_step[c.out] = comp.steps(traj, ctx, **c.params)
                out[c.out] = math.fsum(per_step[c.out])
            else:
                out[c.out] = comp(traj, ctx, **c.params)
        parts = math.fsum(c.weight * out[c.out] for c in self.components)
        total = parts if self.floor is None else max(self.floor, parts)
        summed = total == parts  # False when the floor binds or a gate fails
        for g in self.gate:
            if g not in out:
                out[g] = get_reward(g)(traj, ctx)
            if out[g] <= 0:
                total, summed = self.gate_fail, False
        out["total"] = total
        n = len(traj.steps)
        steps = [0.0] * (n - 1) + [total] if n else []
        if per_step and n and summed:
            steps = [
                math.fsum(c.weight * per_step[c.out][t] for c in self.components if c.out in per_step) for t in range(n)
            ]
            steps[-1] += math.fsum(c.weight * out[c.out] for c in self.components if c.out not in per_step)
        if per_step:
            for step, r in zip(traj.steps, steps, strict=True):
                step.reward = r
        return out, steps

    def score_many(self, trajs: list[Trajectory], extra: dict[Hashable, Any] | None = None) -> list[dict[str, float]]:
        """Score a batch: groups are the trajectories sharing a task id; the batch is all of them,
        or, for trajectories with `metadata["reward_batch"]`, those sharing its value (so a rescore
        rebuilds the batches a run scored together, e.g. Agent0's repetition penalty)."""
        groups: dict[str, list[Trajectory]] = defaultdict(list)
        batches: dict[Any, list[Trajectory]] = defaultdict(list)
        for t in trajs:
            groups[t.task.id].append(t)
            batches[t.metadata.get("reward_batch")].append(t)
        shared: dict[Hashable, Any] = dict(extra or {})
        return [
            self.score(
                t, RewardContext(group=groups[t.task.id], batch=batches[t.metadata.get("reward_batch")], extra=shared)
            )
            for t in trajs
        ]

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_defaults=False)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardSpec:
        if not isinstance(data, dict):
            raise ConfigError(f"a reward spec must be a mapping, got {type(data).__name__}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> RewardSpec:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"reward spec is not valid JSON: {exc}") from None

    @classmethod
    def from_toml(cls, text: str) -> RewardSpec:
        import tomllib

        try:
            return cls.from_dict(tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"reward spec is not valid TOML: {exc}") from None

    @classmethod
    def from_yaml(cls, text: str) -> RewardSpec:
        import yaml  # lazy: PyYAML comes with transformers/datasets

        try:
            return cls.from_dict(yaml.safe_load(text))
        except yaml.YAMLError as exc:
            raise ConfigError(f"reward spec is not valid YAML: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> RewardSpec:
        """Read a spec from a .toml, .yaml/.yml or .json file."""
        from workbench.configfile import read_config_file

        return cls.from_dict(read_config_file(path, what="reward spec"))

    @classmethod
    def preset(cls, name: str) -> RewardSpec:
        """A seed's reward: see `list_presets()`."""
        from workbench.rewards.presets import PRESETS

        if name not in PRESETS:
            raise ConfigError(f"unknown reward preset {name!r}; known: {', '.join(sorted(PRESETS))}")
        return cls.from_dict(PRESETS[name])


def list_presets() -> list[str]:
    """The names `RewardSpec.preset` takes, sorted."""
    from workbench.rewards.presets import PRESETS

    return sorted(PRESETS)
