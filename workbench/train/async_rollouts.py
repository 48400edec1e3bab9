"""Deprecated: `workbench.train.episode_producer` (asynchronous RL is "overlapped"; "async" names asyncio APIs).

`AsyncRollouts` is `EpisodeProducer`; each old name warns (`DeprecationWarning`) when read from here.
"""

from workbench._lazy import moved_names

__getattr__ = moved_names(
    __name__,
    {
        "AsyncRollouts": "workbench.train.episode_producer:EpisodeProducer",
        "RolloutWeights": "workbench.train.episode_producer:VersionedWeights",
        "VersionedPolicy": "workbench.train.episode_producer:VersionedPolicy",
        "Wave": "workbench.train.episode_producer:Wave",
    },
)
