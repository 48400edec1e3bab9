"""A reward component: a named function of a trajectory (and context), and what it reads.

`component` marks a function as one without registering it anywhere; the registry
(`workbench.rewards.registry`) registers the built-in ones when first asked, and `@reward` is
`component` plus registration, for your own.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast, get_args

from workbench.errors import ConfigError
from workbench.rewards.text import extract_tag
from workbench.trajectory import Trajectory

RewardUse = Literal["trajectory", "group", "batch"]
"""What a component reads besides its trajectory: nothing more, its group, or its batch."""

USES: tuple[RewardUse, ...] = get_args(RewardUse)
_Fn = TypeVar("_Fn", bound=Callable[..., Any])


@dataclass
class RewardContext:
    """What a component may look at besides the trajectory itself."""

    group: list[Trajectory] = field(default_factory=list)  # same task id, this one included
    batch: list[Trajectory] = field(default_factory=list)  # everything scored together
    extra: dict[Hashable, Any] = field(default_factory=dict)  # shared by one scoring pass, e.g. a cache

    @classmethod
    def for_one(cls, traj: Trajectory) -> RewardContext:
        return cls(group=[traj], batch=[traj])


@dataclass(frozen=True)
class RewardComponent:
    name: str
    fn: Callable[..., float | Sequence[float]]  # one float per step when `per_step`, else one float
    description: str
    params: dict[str, Any]  # name -> default
    uses: RewardUse = "trajectory"
    per_step: bool = False  # fn returns one value per step; the component's value is their sum
    reads_turn_format: bool = False  # reads an agent's turn format in `Step.raw` (tags, cells): NB-Agent's or a seed's

    def __call__(self, traj: Trajectory, ctx: RewardContext | None = None, **params: Any) -> float:
        if self.per_step:
            return math.fsum(self.steps(traj, ctx, **params))
        self._check_params(params)
        return float(cast(float, self.fn(traj, ctx or RewardContext.for_one(traj), **params)))

    def steps(self, traj: Trajectory, ctx: RewardContext | None = None, **params: Any) -> list[float]:
        """One value per step: a per-step component's own values; for any other component,
        its value on the last step and 0 before (an empty list for a trajectory with no steps)."""
        if not self.per_step:
            n = len(traj.steps)
            return [0.0] * (n - 1) + [self(traj, ctx, **params)] if n else []
        self._check_params(params)
        per_step = cast(Sequence[float], self.fn(traj, ctx or RewardContext.for_one(traj), **params))
        values = [float(v) for v in per_step]
        if len(values) != len(traj.steps):
            raise ConfigError(
                f"per-step reward {self.name!r} returned {len(values)} values for "
                f"{len(traj.steps)} steps; return exactly one per step"
            )
        return values

    def _check_params(self, params: dict[str, Any]) -> None:
        unknown = set(params) - set(self.params)
        if unknown:
            raise ConfigError(
                f"reward {self.name!r} has no param(s) {sorted(unknown)}; "
                f"its params are {sorted(self.params) or 'none'}"
            )


_MARK = "__reward_component__"


def component(
    name: str, *, uses: RewardUse = "trajectory", per_step: bool = False, reads_turn_format: bool = False
) -> Callable[[_Fn], _Fn]:
    """Mark `fn(traj, ctx, **params)` as the component `name` (see `component_of`); registers nothing.
    `reads_turn_format=True` says it reads an agent's turn format in `Step.raw` (`<think>`/`<code>` tags,
    cells, a seed's tags), so episodes that do not follow one (a harness's calls through the model
    gateway) refuse it."""
    if uses not in USES:
        raise ConfigError(f"uses={uses!r}; use one of {USES}")

    def mark(fn: _Fn) -> _Fn:
        sig = inspect.signature(fn)
        params = {p.name: p.default for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        doc = (inspect.getdoc(fn) or "").split("\n")[0]
        setattr(fn, _MARK, RewardComponent(name, fn, doc, params, uses, per_step, reads_turn_format))
        return fn

    return mark


def component_of(fn: object) -> RewardComponent | None:
    """The component `fn` was marked as by `component`, or None."""
    found = getattr(fn, _MARK, None)
    return found if isinstance(found, RewardComponent) else None


# -- what components read from a trajectory ---------------------------------------------------
def answer_of(traj: Trajectory) -> str | None:
    """`traj.final_answer` if set, else the last `<answer>…</answer>` in its steps, else None."""
    if traj.final_answer is not None:
        return traj.final_answer
    for step in reversed(traj.steps):
        found = extract_tag(step.raw or "", "answer")
        if found is not None:
            return found
    return None


def question_of(traj: Trajectory) -> str | None:
    """A proposer's question: `metadata["question"]` when the episode recorded one (evolve does,
    from the submit call), else the last `<question>…</question>` in its steps, else None."""
    if traj.metadata.get("question") is not None:
        return str(traj.metadata["question"])
    for step in reversed(traj.steps):
        found = extract_tag(step.raw or "", "question")
        if found is not None:
            return found
    return None


__all__ = [
    "USES",
    "RewardComponent",
    "RewardContext",
    "RewardUse",
    "answer_of",
    "component",
    "component_of",
    "question_of",
]
