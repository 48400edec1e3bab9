"""Old names of `workbench.evolve.experiment` (an evolve config file was once an "evolve job", which an
episode's `EpisodeJob` also was): `EvolveJob` is `EvolveExperiment`, `run_job` is `run_experiment`."""

from __future__ import annotations

import warnings
from typing import Any

_RENAMED = {"EvolveJob": "EvolveExperiment", "run_job": "run_experiment"}


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        from workbench.evolve import experiment

        new = _RENAMED[name]
        warnings.warn(
            f"workbench.evolve.job.{name} is now workbench.evolve.experiment.{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(experiment, new)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
