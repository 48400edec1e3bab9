"""The contracts several layers implement, and the closed sets of names they share.

    store: TrajectoryStore      # where a Recorder writes: workbench.store.Store, or a user's class
    spec: Scorer                # what scores a trajectory: RewardSpec, resolve_reward(...)'s results
    runner: EpisodeRunner[Policy]   # await runner(tasks, policy) -> trajectories (the trainer's rollouts)
    curriculum: Curriculum      # told the optimizer step before each rollout (a simulated search)

Only `workbench.trajectory`, `workbench.errors` and the standard library are imported here, so
every layer may import this module. Closed sets of names are `Literal` aliases, their values
tuples: `Termination` (defined beside `Trajectory`), `Role`, `EpisodeKind`. `EpisodeRunner` is
generic in the policy it samples from, because the `Policy` protocol lives above this module
(`workbench.policies.base`): its users write `EpisodeRunner[Policy]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeVar, get_args, runtime_checkable

from workbench.trajectory import TERMINATIONS, Task, Termination, Trajectory

Role = Literal["solver", "proposer", "eval", "synthesizer", "direct_solver", "harness"]
"""The roles workbench itself gives episodes (`Trajectory.role`; a user may name others)."""

ROLES: tuple[Role, ...] = get_args(Role)

EpisodeKind = Literal["search_r1", "nbagent"]
"""The episode runners a training config can name (`TrainConfig.episode_kind`)."""

EPISODE_KINDS: tuple[EpisodeKind, ...] = get_args(EpisodeKind)


@runtime_checkable
class Scorer(Protocol):
    """A reward spec: rewards of one trajectory (`"total"` is the scalar). A `name` attribute,
    when present, is what the trajectory records as its `reward_spec`; `to_json()`, when present,
    goes to the store's reward history."""

    def score(self, traj: Trajectory) -> dict[str, float]: ...


@runtime_checkable
class TrajectoryStore(Protocol):
    """Where a `Recorder` writes: `workbench.store.Store`, or any class with these two methods."""

    def write(self, traj: Trajectory) -> None:
        """Store `traj` durably (replacing one with the same id); raise when it cannot."""
        ...

    def record_rewards(
        self,
        traj_id: str,
        rewards: dict[str, float],
        spec_name: str,
        spec_json: str | dict[str, Any] | None = None,
        provenance: dict[str, Any] | None = None,
    ) -> None:
        """Make `rewards` the stored trajectory's current rewards and keep them in its history."""
        ...


PolicyT_contra = TypeVar("PolicyT_contra", contravariant=True)


@runtime_checkable
class EpisodeRunner(Protocol[PolicyT_contra]):
    """Runs one batch of episodes with the policy it is given (the trainer passes its live one).

    Returns one trajectory per task, in the order of `tasks`, unscored and unwritten unless the
    runner says otherwise: whoever drives it scores and records each once. `SearchR1Episodes`,
    `NBAgentEpisodes`, the self-evolution runners and the demo's are the ones workbench ships."""

    async def __call__(self, tasks: Sequence[Task], policy: PolicyT_contra) -> list[Trajectory]: ...


@runtime_checkable
class Curriculum(Protocol):
    """A schedule that follows training: told the optimizer step i (1-based, as ZeroSearch counts)
    before the rollouts of step i. ZeroSearch's `SimulatedSearch` (noise probability p_i) is one;
    an episode runner lists its own in a `curricula` attribute for the trainer to advance."""

    def set_training_step(self, step: int) -> None: ...


__all__ = [
    "EPISODE_KINDS",
    "ROLES",
    "TERMINATIONS",
    "Curriculum",
    "EpisodeKind",
    "EpisodeRunner",
    "Role",
    "Scorer",
    "Termination",
    "TrajectoryStore",
]
