"""The reward registry: every component is a named function of a trajectory (and context).

    from workbench.rewards import reward, RewardContext, list_rewards

    @reward("my.brevity")
    def brevity(traj, ctx, *, max_steps: int = 8) -> float:
        "1 for short episodes, falling to 0 at max_steps."
        return max(0.0, 1 - len(traj.steps) / max_steps)

    list_rewards()                        # [..., 'my.brevity', ...] (built-ins included)
    get_reward("my.brevity")(traj, max_steps=4)

A component's keyword-only arguments are its params (what a `RewardSpec` may set). `uses` says
what context it reads: "trajectory" (only the trajectory), "group" (`ctx.group`: trajectories
of the same task id, e.g. difficulty, uncertainty) or "batch" (`ctx.batch`, e.g. repetition).

A per-step component (`per_step=True`) returns one value per step; its value as a component is
their sum, and `RewardSpec.score_steps` pays each value on its own turn:

    @reward("my.short_cells", per_step=True)
    def short_cells(traj, ctx) -> list[float]:
        return [float(len(s.code or "") < 200) / len(traj.steps) for s in traj.steps]

Nothing registers on import: `@reward` is an explicit registration, and the built-in components
(em, f1, l0.*, drzero.*, agent0.*, asearcher.*, llm_judge, env) are registered by `builtin_rewards()`,
which the first lookup calls. A component of another layer (e.g. `synth.recorded`) is registered
by the code that uses it, with `register_reward(fn)`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from workbench.errors import ConfigError
from workbench.registrations import record, why_missing
from workbench.rewards.component import (
    USES,
    RewardComponent,
    RewardContext,
    RewardUse,
    answer_of,
    component,
    component_of,
    question_of,
)

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_REGISTRY: dict[str, RewardComponent] = {}
_BUILTINS_ADDED = False


def reward(
    name: str, *, uses: RewardUse = "trajectory", per_step: bool = False, reads_turn_format: bool = False
) -> Callable[[_Fn], _Fn]:
    """Register `fn(traj, ctx, **params) -> float` under `name` (re-registering replaces);
    with `per_step=True`, `fn` returns a list with one float per step; `reads_turn_format=True` marks a
    component that reads an agent's turn format in `Step.raw` (the model gateway refuses it)."""
    mark = component(name, uses=uses, per_step=per_step, reads_turn_format=reads_turn_format)

    def register(fn: _Fn) -> _Fn:
        register_reward(mark(fn))
        return fn

    return register


def register_reward(fn: Callable[..., Any] | RewardComponent) -> RewardComponent:
    """Register a function marked with `component(...)` (or a `RewardComponent`) under its name."""
    found = fn if isinstance(fn, RewardComponent) else component_of(fn)
    if found is None:
        raise ConfigError(
            f"{getattr(fn, '__name__', fn)!r} is not a reward component; decorate it with "
            "@workbench.rewards.reward('name') (or component('name') and then register_reward)"
        )
    builtin_rewards()
    _REGISTRY[found.name] = found
    record("reward", found.name, found, _install)
    return found


def _install(name: str, found: RewardComponent) -> None:
    """Register a carried component (`workbench.registrations.install`)."""
    register_reward(found)


def get_reward(name: str) -> RewardComponent:
    """The registered reward component `name`; an unknown name is a `ConfigError` listing the known ones."""
    builtin_rewards()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"unknown reward component {name!r}; known: {', '.join(list_rewards())}. Register your own "
            "with @workbench.rewards.reward(name)" + why_missing("reward", name)
        ) from None


def list_rewards() -> list[str]:
    """The names of the registered reward components (the built-ins included), sorted."""
    builtin_rewards()
    return sorted(_REGISTRY)


def describe_rewards() -> dict[str, str]:
    """name -> one-line description, for widgets and `--help` texts."""
    return {n: _REGISTRY[n].description for n in list_rewards()}


def _components(module: ModuleType) -> list[RewardComponent]:
    return [found for value in vars(module).values() if (found := component_of(value)) is not None]


def builtin_rewards() -> None:
    """Register every seed's components (a name registered before keeps its own); runs once."""
    global _BUILTINS_ADDED
    if _BUILTINS_ADDED:
        return
    _BUILTINS_ADDED = True
    from workbench.rewards import agent0, asearcher, drzero, env, judge, l0, qa

    for module in (qa, l0, drzero, agent0, asearcher, judge, env):
        for found in _components(module):
            _REGISTRY.setdefault(found.name, found)


__all__ = [
    "USES",
    "RewardComponent",
    "RewardContext",
    "RewardUse",
    "answer_of",
    "builtin_rewards",
    "component",
    "describe_rewards",
    "get_reward",
    "list_rewards",
    "question_of",
    "register_reward",
    "reward",
]
