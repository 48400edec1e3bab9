"""RL training on TRL 1.16: advantage estimators, the GRPOTrainer subclass, episode runners, launch.

    from workbench.train import TrainConfig, launch
    handle = launch(TrainConfig.load("train.toml"))     # a child process; the notebook stays alive
    for row in handle.stream(): print(row["step"], row.get("reward"))

Heavy pieces (TRL, torch) load on first use, so `import workbench.train` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from workbench.train.config import EPISODE_KINDS, ESTIMATORS, TrainConfig

# eager (light): a lazy name equal to its submodule would resolve to the module after the first import
from workbench.train.launch import TrainingHandle, launch

_LAZY = {
    "WorkbenchGRPOTrainer": "workbench.train.trainer",
    "SearchR1Episodes": "workbench.train.episodes",
    "MetricsCallback": "workbench.train.callbacks",
    "train": "workbench.train.run",
    "live_policy": "workbench.train.policy",
    "resolve_reward": "workbench.train.rewards",
    "advantages": "workbench.train.advantages",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        return module if name == "advantages" else getattr(module, name)
    raise AttributeError(f"module 'workbench.train' has no attribute {name!r}")


__all__ = [
    "EPISODE_KINDS",
    "ESTIMATORS",
    "MetricsCallback",
    "SearchR1Episodes",
    "TrainConfig",
    "TrainingHandle",
    "WorkbenchGRPOTrainer",
    "advantages",
    "launch",
    "live_policy",
    "resolve_reward",
    "train",
]
