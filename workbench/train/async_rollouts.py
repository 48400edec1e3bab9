"""Deprecated: `workbench.train.episode_producer` (asynchronous RL is "overlapped"; "async" names asyncio APIs).

`AsyncRollouts` is `EpisodeProducer`; each old name warns (`DeprecationWarning`) when read from here.
"""

from __future__ import annotations

import warnings
from typing import Any

from workbench.train import episode_producer

_RENAMED = {
    "AsyncRollouts": "EpisodeProducer",
    "RolloutWeights": "VersionedWeights",
    "VersionedPolicy": "VersionedPolicy",
    "Wave": "Wave",
}


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"workbench.train.async_rollouts.{name} is now workbench.train.episode_producer.{new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(episode_producer, new)
