"""Deprecated: `workbench.train.overlap` (asynchronous RL is "overlapped"; "async" names asyncio APIs).

`AsyncTraining` is `OverlappedTraining`, which now takes an `OverlapHost` instead of the trainer;
each old name warns (`DeprecationWarning`) when read from here.
"""

from workbench._lazy import moved_names

__getattr__ = moved_names(
    __name__,
    {
        "AsyncTraining": "workbench.train.overlap:OverlappedTraining",
        "token_versions": "workbench.train.overlap:token_versions",
    },
)
