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

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports

if TYPE_CHECKING:
    from workbench.widgets.evolution import EvolutionDashboard
    from workbench.widgets.launcher import TrainingLauncher
    from workbench.widgets.report import report_html, write_report
    from workbench.widgets.tuner import RewardTuner
    from workbench.widgets.viewer import TrajectoryViewer
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "workbench.widgets.evolution": ["EvolutionDashboard"],
            "workbench.widgets.launcher": ["TrainingLauncher"],
            "workbench.widgets.report": ["report_html", "write_report"],
            "workbench.widgets.tuner": ["RewardTuner"],
            "workbench.widgets.viewer": ["TrajectoryViewer"],
        },
    )

__all__ = ["EvolutionDashboard", "RewardTuner", "TrainingLauncher", "TrajectoryViewer", "report_html", "write_report"]
