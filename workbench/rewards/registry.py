"""The reward registry: every component is a named function of a trajectory (and context).

    from workbench.rewards import reward, RewardContext, list_rewards

    @reward("my.brevity")
    def brevity(traj, ctx, *, max_steps: int = 8) -> float:
        "1 for short episodes, falling to 0 at max_steps."
        return max(0.0, 1 - len(traj.steps) / max_steps)

    list_rewards()                        # [..., 'my.brevity', ...]
    get_reward("my.brevity")(traj, max_steps=4)

A component's keyword-only arguments are its params (what a `RewardSpec` may set). `uses` says
what context it reads: "trajectory" (only the trajectory), "group" (`ctx.group`: trajectories
of the same task id, e.g. difficulty, uncertainty) or "batch" (`ctx.batch`, e.g. repetition).

A per-step component (`per_step=True`) returns one value per step; its value as a component is
their sum, and `RewardSpec.score_steps` pays each value on its own turn:

    @reward("my.short_cells", per_step=True)
    def short_cells(traj, ctx) -> list[float]:
        return [float(len(s.code or "") < 200) / len(traj.steps) for s in traj.steps]
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


_REGISTRY: dict[str, RewardComponent] = {}


def reward(name: str, *, uses: RewardUse = "trajectory", per_step: bool = False) -> Callable[[_Fn], _Fn]:
    """Register `fn(traj, ctx, **params) -> float` under `name` (re-registering replaces);
    with `per_step=True`, `fn` returns a list with one float per step."""
    if uses not in USES:
        raise ConfigError(f"uses={uses!r}; use one of {USES}")

    def register(fn: _Fn) -> _Fn:
        sig = inspect.signature(fn)
        params = {p.name: p.default for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        doc = (inspect.getdoc(fn) or "").split("\n")[0]
        _REGISTRY[name] = RewardComponent(name, fn, doc, params, uses, per_step)
        return fn

    return register


def get_reward(name: str) -> RewardComponent:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown reward component {name!r}; known: {', '.join(list_rewards())}") from None


def list_rewards() -> list[str]:
    return sorted(_REGISTRY)


def describe_rewards() -> dict[str, str]:
    """name -> one-line description, for widgets and `--help` texts."""
    return {n: _REGISTRY[n].description for n in list_rewards()}


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
