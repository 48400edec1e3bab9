"""Advantage estimators as objects: a registry of named classes that own their parameters.

    @estimator("scaled")
    @dataclass(frozen=True)
    class Scaled(Estimator):
        '''The raw reward times `weight`.'''

        weight: float = param(1.0, "multiplies the reward")

        def advantages(self, batch: Batch) -> Advantages:
            return Advantages(torch.tensor(batch.rewards()) * self.weight)

    TrainConfig(estimator="scaled", estimator_params={"scaled": {"weight": 2.0}})

An estimator is a frozen dataclass whose fields are its parameters (`param(default, help)`), set
per estimator name in `TrainConfig.estimator_params` and checked by `make_estimator` (type) and its
own `validate()` (range), each error naming the field and the fix. `advantages(batch)` sees the
global batch (`Batch`: every process's trajectories in order, `group_size` consecutive rollouts of
one task per group) and returns `Advantages`, one entry per trajectory; the trainer places them on
the training rows (`workbench.train.rows.row_advantages`). How batches are drawn for it is a class
attribute: `group_key` None groups `num_generations` rollouts of one task (TRL's sampler); a task
metadata key (HRPO: "hops") draws one rollout per task and groups tasks sharing that key's value.

The built-ins wrap the hand-checked functions of `workbench.train.advantages`. This module stays
free of torch at import (`TrainConfig` validates names and parameters through it).
"""

from __future__ import annotations

import abc
import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from workbench.errors import ConfigError
from workbench.registrations import record, why_missing

if TYPE_CHECKING:
    import torch

    from workbench.trajectory import Trajectory


def param(default: Any, help: str) -> Any:
    """A documented estimator parameter (a dataclass field with `help` metadata)."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Batch:
    """What an estimator sees: the global batch of one optimizer step.

    `trajectories` are every process's, in process order, scored; each `group_size` consecutive ones
    form a group (the rollouts of one task, or with a `group_key` distinct tasks sharing its value).
    `epsilon` is the loss's lower clip range (`TrainConfig.epsilon`); `scale_rewards` is TRL's
    setting ("group" | "batch" | "none").
    """

    trajectories: Sequence[Trajectory]
    group_size: int
    epsilon: float = 0.2
    scale_rewards: str = "group"

    def rewards(self) -> list[float]:
        """Each trajectory's total reward (0 when unscored)."""
        return [float(t.reward or 0.0) for t in self.trajectories]


@dataclass(frozen=True)
class Advantages:
    """An estimator's output, one entry per trajectory of the batch (after `row_advantages`: per row).

    values: (N,) one advantage per trajectory, or (N, turns) one per turn, placed on that turn's
        model tokens (zero-padded past a trajectory's last turn).
    eps_high: (N,) the ratio's upper clip per trajectory (ADPO); None keeps `TrainConfig.epsilon_high`.
    keep: (N,) bool; trajectories marked False leave the loss (ASearcher's flat groups); None keeps all.
    token_whiten: whiten the (N,) values over every loss token of the global batch after masking
        (AReaL's `adv_norm`).
    New corrections (e.g. an off-policy weight) are added as fields with a default of None.
    """

    values: torch.Tensor
    eps_high: torch.Tensor | None = None
    keep: torch.Tensor | None = None
    token_whiten: bool = False


class Estimator(abc.ABC):
    """An advantage estimator. Subclasses are frozen dataclasses registered with `@estimator(NAME)`."""

    name: ClassVar[str] = ""  # set by @estimator
    group_key: ClassVar[str | None] = None  # None: groups of rollouts of one task; else a task metadata key

    @abc.abstractmethod
    def advantages(self, batch: Batch) -> Advantages:
        """The advantages of every trajectory in `batch`."""

    def validate(self) -> None:  # noqa: B027 (an optional hook: most estimators accept any value)
        """Raise a ConfigError (see `bad`) when a parameter value cannot work."""

    def bad(self, param_name: str, why: str) -> ConfigError:
        """The error for a bad parameter: names the config field that sets it."""
        return ConfigError(f"TrainConfig.estimator_params.{self.name}.{param_name}: {why}")

    def rollouts_per_task(self, num_generations: int) -> int:
        """Rollouts of each task in a batch: 1 when groups are formed by `group_key`, else `num_generations`."""
        return 1 if self.group_key is not None else num_generations

    def params(self) -> dict[str, Any]:
        """The parameter values, by name."""
        return (
            {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} if dataclasses.is_dataclass(self) else {}
        )


E = TypeVar("E", bound=type[Estimator])
_REGISTRY: dict[str, type[Estimator]] = {}


def estimator(name: str) -> Callable[[E], E]:
    """Class decorator: register a (dataclass) `Estimator` subclass under `name` (`TrainConfig.estimator`)."""
    if not name or not name.isidentifier():
        raise ConfigError(f"estimator name {name!r}: use a Python identifier, e.g. 'my_grpo'")

    def register(cls: E) -> E:
        if not (isinstance(cls, type) and issubclass(cls, Estimator) and "__dataclass_fields__" in cls.__dict__):
            raise ConfigError(
                f"@estimator({name!r}) decorates {cls!r}: it must be a subclass of Estimator made a dataclass "
                "(put @dataclass(frozen=True) under @estimator)"
            )
        old = _REGISTRY.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ConfigError(f"estimator {name!r} is already registered by {old.__qualname__}; pick another name")
        cls.name = name
        _REGISTRY[name] = cls
        if cls.__module__ != __name__:  # the built-ins below are made again by every process
            record("estimator", name, cls, _install)
        return cls

    return register


def _install(name: str, cls: type[Estimator]) -> None:
    """Register a carried estimator class (`workbench.registrations.install`), replacing this process's own."""
    cls.name = name
    _REGISTRY[name] = cls
    record("estimator", name, cls, _install)


def estimator_names() -> tuple[str, ...]:
    """Registered estimator names, in registration order (the built-ins first)."""
    return tuple(_REGISTRY)


def estimator_class(name: str, where: str = "TrainConfig.estimator") -> type[Estimator]:
    """The class registered under `name`; `where` names the setting in the error."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"{where}: {name!r} is not a registered estimator; use one of {', '.join(_REGISTRY)} "
            "(or register your own with @workbench.train.estimators.estimator(NAME))" + why_missing("estimator", name)
        ) from None


def _parameters(cls: type[Estimator]) -> tuple[dataclasses.Field[Any], ...]:
    """The parameters (dataclass fields) of a registered class; `@estimator` checked it is a dataclass."""
    return dataclasses.fields(typing.cast(Any, cls))


def parameters_help(name: str) -> dict[str, str]:
    """{parameter: help} of the estimator registered under `name`."""
    return {f.name: f.metadata.get("help", "") for f in _parameters(estimator_class(name))}


def _check_type(cls: type[Estimator], key: str, value: Any, where: str) -> Any:
    """`value` as the parameter's declared type (an int is a float); a ConfigError when it is not one."""
    try:
        hint = typing.get_type_hints(cls).get(key)
    except Exception:  # a hint that does not resolve (a class defined in a function): no check
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (bool, int, float, str) and (type(value) is not hint):
        raise ConfigError(f"{where}.{key}: {value!r} is not a {hint.__name__}; give a {hint.__name__}")
    return value


def make_estimator(name: str, params: Mapping[str, Any] | None = None) -> Estimator:
    """The estimator `name` with `params` (unknown names, wrong types and bad values are ConfigErrors)."""
    cls = estimator_class(name)
    where = f"TrainConfig.estimator_params.{name}"
    if params is not None and not isinstance(params, Mapping):
        raise ConfigError(f"{where}: {params!r} is not a table; give {{parameter: value}}")
    given = dict(params or {})
    known = {f.name for f in _parameters(cls)}
    unknown = sorted(set(given) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "no parameters"
        raise ConfigError(f"{where}: unknown parameter(s) {', '.join(unknown)}; {name} takes {takes}")
    built = cls(**{k: _check_type(cls, k, v, where) for k, v in given.items()})
    built.validate()
    return built


# -- the built-ins ----------------------------------------------------------------------------


@estimator("grpo")
@dataclass(frozen=True)
class GRPO(Estimator):
    """Group-relative: (r - group mean) / (group std + 1e-4), TRL's `scale_rewards` honoured."""

    def advantages(self, batch: Batch) -> Advantages:
        import torch

        from workbench.train import advantages as A

        rewards = batch.rewards()
        if batch.scale_rewards == "batch":
            centred = A.grpo(rewards, batch.group_size, scale=False)
            values = centred / (torch.tensor(rewards).std() + A.EPS) if len(rewards) > 1 else centred
        else:
            values = A.grpo(rewards, batch.group_size, scale=batch.scale_rewards != "none")
        return Advantages(values)


@estimator("hrpo")
@dataclass(frozen=True)
class HRPO(Estimator):
    """Dr. Zero's HRPO: one rollout per question, normalised within its hop-count group (eps 1e-6)."""

    group_key: ClassVar[str | None] = "hops"

    def advantages(self, batch: Batch) -> Advantages:
        from workbench.train import advantages as A

        return Advantages(A.hrpo(batch.rewards(), [t.hops for t in batch.trajectories]))


@estimator("reinforce_pp")
@dataclass(frozen=True)
class ReinforcePP(Estimator):
    """L0's REINFORCE++: per-turn discounted returns whitened over every turn of the batch, per turn."""

    gamma: float = param(0.95, "Step discount of the per-turn returns G_t = r_t + gamma·G_{t+1}.")

    def validate(self) -> None:
        if not 0.0 < self.gamma <= 1.0:
            raise self.bad("gamma", f"{self.gamma} must be in (0, 1]")

    def advantages(self, batch: Batch) -> Advantages:
        import torch

        from workbench.train import advantages as A
        from workbench.train.rollout import step_rewards

        returns = A.reinforce_pp([step_rewards(t) for t in batch.trajectories], self.gamma)
        turns = max((len(r) for r in returns), default=0)
        values = torch.zeros((len(returns), turns), dtype=torch.float64)
        for i, r in enumerate(returns):
            values[i, : len(r)] = torch.tensor(r, dtype=torch.float64)
        return Advantages(values)


@estimator("adpo")
@dataclass(frozen=True)
class ADPO(Estimator):
    """Agent0's ADPO: grpo · s(p) and a per-trajectory upper clip ε_high(p), p = the task's self-consistency."""

    min_scale: float = param(0.6, "Advantage scale at self-consistency <= p_low (m).")
    p_low: float = param(0.3, "Self-consistency where the advantage scale starts to rise.")
    p_high: float = param(0.8, "Self-consistency where the scale reaches 1 and eps_high its floor.")
    eps_boost: float = param(0.1, "Extra upper clip at low self-consistency.")

    def validate(self) -> None:
        if not 0.0 <= self.min_scale <= 1.0:
            raise self.bad("min_scale", f"{self.min_scale} must be in [0, 1] (Agent0 uses 0.6)")
        if not self.p_low < self.p_high:
            raise self.bad("p_low", f"{self.p_low} must be below p_high={self.p_high} (Agent0: 0.3 and 0.8)")
        if self.eps_boost < 0:
            raise self.bad("eps_boost", f"{self.eps_boost} must be >= 0")

    def advantages(self, batch: Batch) -> Advantages:
        from workbench.train import advantages as A
        from workbench.train.rollout import task_self_consistency

        p = [task_self_consistency(t.task) for t in batch.trajectories]
        values = A.grpo(batch.rewards(), batch.group_size) * A.adpo_scale(p, self.min_scale, self.p_low, self.p_high)
        eps_high = A.adpo_eps_high(p, batch.epsilon, self.eps_boost, self.p_low, self.p_high)
        return Advantages(values, eps_high=eps_high)


@estimator("asearcher")
@dataclass(frozen=True)
class ASearcher(Estimator):
    """ASearcher/AReaL: group-centred, biased, scaled and clipped; flat groups dropped; token-whitened."""

    reward_bias: float = param(-0.5, "Bias added to the group-centred reward before scaling.")
    reward_scaling: float = param(10.0, "Scale of the biased, centred reward.")
    reward_clip: float = param(20.0, "Clip of the scaled reward (±).")
    adv_norm: bool = param(True, "Whiten advantages over every loss token of the batch.")

    def validate(self) -> None:
        if self.reward_clip <= 0:
            raise self.bad("reward_clip", f"{self.reward_clip} must be > 0 (AReaL: 20)")

    def advantages(self, batch: Batch) -> Advantages:
        from workbench.train import advantages as A

        values, keep = A.asearcher(
            batch.rewards(), batch.group_size, self.reward_bias, self.reward_scaling, self.reward_clip
        )
        return Advantages(values, keep=keep, token_whiten=self.adv_norm)


@estimator("reinforce")
@dataclass(frozen=True)
class Reinforce(Estimator):
    """ZeroSearch's REINFORCE: the raw reward is the advantage."""

    def advantages(self, batch: Batch) -> Advantages:
        from workbench.train import advantages as A

        return Advantages(A.reinforce(batch.rewards()))


BUILTIN = estimator_names()

__all__ = [
    "ADPO",
    "BUILTIN",
    "GRPO",
    "HRPO",
    "ASearcher",
    "Advantages",
    "Batch",
    "Estimator",
    "Reinforce",
    "ReinforcePP",
    "estimator",
    "estimator_class",
    "estimator_names",
    "make_estimator",
    "param",
    "parameters_help",
]
