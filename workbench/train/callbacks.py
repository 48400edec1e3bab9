"""Metrics out of a training run: every TRL log row to `<output_dir>/metrics.jsonl` and the store.

    trainer = WorkbenchGRPOTrainer(..., callbacks=[MetricsCallback("runs/a", store=Store("runs/a"), run_id="a")])

Each JSONL line is `{"step", "max_steps", "time", <metric>: value, ...}` (reward, rewards per
component, pass_rate/hop_k, entropy, completions/*_length, clip_ratio/*, episode/steps, ...), so a
notebook (or `TrainingHandle.stream()`) can plot a run while it trains.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

if TYPE_CHECKING:
    from workbench.store import Store


class MetricsCallback(TrainerCallback):
    """Appends each log row to metrics.jsonl (always) and to `store.log_metrics` (when given); in a
    several-process run only the main process writes (its rows are the global batch's)."""

    def __init__(self, output_dir: str | Path, *, store: Store | None = None, run_id: str = "") -> None:
        self.path = Path(output_dir) / "metrics.jsonl"
        self.store = store
        self.run_id = run_id or Path(output_dir).name

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not logs or not state.is_world_process_zero:
            return
        values = {
            k: float(v)
            for k, v in logs.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
        }
        row = {"step": int(state.global_step), "max_steps": int(state.max_steps), "time": time.time(), **values}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        if self.store is not None:
            self.store.log_metrics(self.run_id, int(state.global_step), values)


__all__ = ["MetricsCallback"]
