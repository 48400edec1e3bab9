"""The overlapped-RL classes' old names (asynchronous RL was "async", which names asyncio APIs) still import,
as the new classes, with a DeprecationWarning that names the new home."""

from __future__ import annotations

import importlib

import pytest

from workbench.train import episode_producer, overlap


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("workbench.train.async_trainer", "AsyncTraining", overlap.OverlappedTraining),
        ("workbench.train.async_trainer", "token_versions", overlap.token_versions),
        ("workbench.train.async_rollouts", "AsyncRollouts", episode_producer.EpisodeProducer),
        ("workbench.train.async_rollouts", "RolloutWeights", episode_producer.VersionedWeights),
        ("workbench.train.async_rollouts", "VersionedPolicy", episode_producer.VersionedPolicy),
        ("workbench.train.async_rollouts", "Wave", episode_producer.Wave),
    ],
)
def test_an_old_name_is_the_new_class_with_a_deprecation_warning(module, old, new):
    shim = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{old} is now workbench\.train\.\w+\.{new.__name__}"):
        assert getattr(shim, old) is new


def test_a_name_the_old_module_never_had_is_an_attribute_error():
    shim = importlib.import_module("workbench.train.async_trainer")
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        shim.Nothing  # noqa: B018
