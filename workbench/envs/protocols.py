"""What every episode source speaks, whatever the standard behind it: `EnvSource` opens one `EnvEpisode` per
episode, whose `reset` and `step` answer with an `EnvReply`. Implemented by `workbench.envs.source` (OpenEnv,
in this process or served) and `workbench.envs.verifiers_source` (verifiers, in its sidecar)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from workbench._lazy import moved_names


@dataclass(frozen=True)
class EnvReply:
    """What `reset` or `step` returned: the observation's own fields, its reward, done and metadata; the
    environment's rubric scores (`rubric`: "" for the whole rubric, then its parts by name), where it has one;
    and for a chat environment (verifiers), the `messages` it adds to the conversation (the reset's: the
    whole prompt, system message included; None: not a chat environment)."""

    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    rubric: dict[str, float] = field(default_factory=dict)
    messages: list[dict[str, str]] | None = None


class EnvEpisode(Protocol):
    """One episode in an environment (inward: workbench drives it). Not a session: that word is the
    outward side, a client's connection to an episode workbench serves (docs/glossary.md)."""

    async def reset(self, **kwargs: Any) -> EnvReply: ...

    async def step(self, action: dict[str, Any]) -> EnvReply: ...

    async def close(self) -> None: ...


class EnvSource(Protocol):
    """Opens one `EnvEpisode` per episode; `name` is what trajectories record as their `metadata["env"]`."""

    name: str

    def action_schema(self) -> dict[str, Any]:
        """The action model's JSON schema (pydantic's `model_json_schema()`)."""
        ...

    async def open(self) -> EnvEpisode: ...


__all__ = ["EnvEpisode", "EnvReply", "EnvSource"]


# the name before the glossary kept "session" for the outward side
__getattr__ = moved_names(__name__, {"EnvSession": "workbench.envs.protocols:EnvEpisode"})
