"""Deprecated: `workbench.train.overlap` (asynchronous RL is "overlapped"; "async" names asyncio APIs).

`AsyncTraining` is `OverlappedTraining`, which now takes an `OverlapHost` instead of the trainer;
each old name warns (`DeprecationWarning`) when read from here.
"""

from __future__ import annotations

import warnings
from typing import Any

from workbench.train import overlap

_RENAMED = {"AsyncTraining": "OverlappedTraining", "token_versions": "token_versions"}


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"workbench.train.async_trainer.{name} is now workbench.train.overlap.{new}", DeprecationWarning, stacklevel=2
    )
    return getattr(overlap, new)
