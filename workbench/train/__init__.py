"""RL training on TRL 1.16: advantage estimators, the GRPOTrainer subclass, episode runners, launch.

    from workbench.train import TrainConfig, launch
    handle = launch(TrainConfig.load("train.toml"))     # a child process; the notebook stays alive
    for row in handle.stream(): print(row["step"], row.get("reward"))

Heavy pieces (TRL, torch) load on first use, so `import workbench.train` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_exports
from workbench.train.config import TrainConfig
from workbench.train.launch import TrainingHandle, launch  # eager: `launch` is also a submodule's name

if TYPE_CHECKING:
    from workbench.train.run import train
    from workbench.train.trainer import WorkbenchGRPOTrainer
else:
    __getattr__, __dir__ = lazy_exports(
        __name__, {"workbench.train.run": ["train"], "workbench.train.trainer": ["WorkbenchGRPOTrainer"]}
    )

__all__ = ["TrainConfig", "TrainingHandle", "WorkbenchGRPOTrainer", "launch", "train"]
