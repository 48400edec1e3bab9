"""Notebook widgets over a run's store (ipywidgets 8 + plotly), and the static HTML report.

    from workbench.widgets import TrajectoryViewer, RewardTuner, TrainingLauncher, EvolutionDashboard
    TrajectoryViewer("runs/demo")          # step through trajectories, jump to origins, compare
    RewardTuner("runs/demo")               # re-weight a RewardSpec, watch scores move, save/apply
    TrainingLauncher()                     # a TrainConfig form, launch/stop, live metric curves
    EvolutionDashboard("runs/evolve")      # proposer/solver per iteration and hop count

Every widget reads a run read-only, so it works while the run is still writing
(`.refresh()`, `.auto_refresh(seconds)`). `workbench report RUN_DIR` writes the plots as one
offline HTML file. Names import lazily: `import workbench.widgets` pulls in no ipywidgets.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "TrajectoryViewer": "workbench.widgets.viewer",
    "RewardTuner": "workbench.widgets.tuner",
    "TrainingLauncher": "workbench.widgets.launcher",
    "EvolutionDashboard": "workbench.widgets.evolution",
    "write_report": "workbench.widgets.report",
    "report_html": "workbench.widgets.report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench.widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
