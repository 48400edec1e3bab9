"""`TrainingLauncher`: a form over `TrainConfig`, launch/stop, live metric curves, latest samples.

    from workbench.widgets import TrainingLauncher
    ui = TrainingLauncher("runs/demo/train.toml", max_steps=20)   # or TrainingLauncher() + the form
    ui.set(estimator="hrpo", reward="rewards/mine.toml")           # same as editing the fields
    ui.launch()               # a child process (workbench.train.launch); curves refresh every 2 s
    ui.stop()                 # graceful: the run saves after its current step

The form is generated from `TrainConfig`'s fields and their `help`; main settings are shown,
the rest sit under "advanced". Training runs in a child process, so a crash leaves the notebook
alive and shows the log tail.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench.errors import ConfigError, WorkbenchError
from workbench.widgets import _figures, _render
from workbench.widgets._plots import PlotPane
from workbench.widgets._source import Ticker, restart_ticker

if TYPE_CHECKING:
    import pandas as pd

    from workbench.train import TrainConfig, TrainingHandle

MAIN_FIELDS = (
    "model_path",
    "tasks_path",
    "corpus_path",
    "output_dir",
    "store_path",
    "estimator",
    "reward",
    "episode_kind",
    "num_generations",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "max_steps",
    "learning_rate",
    "max_turns",
    "max_completion_length",
    "async_rollouts",
    "max_staleness",
)
CURVES = ("reward", "loss", "entropy", "completions/mean_length", "kl", "learning_rate")
# asynchronous RL: how stale the trained groups were, and the trainer's wait against the producer's
ASYNC_CURVES = ("async/staleness/mean", "async/trainer_wait_s", "async/producer_blocked_s")
INPUT_PATHS = ("model_path", "tasks_path", "corpus_path")  # read by the run: checked before launch


def missing_inputs(values: dict[str, Any], cwd: Path) -> list[str]:
    """A sentence per input path that does not exist where the run will look (relative paths
    resolve against `cwd`, the notebook's directory, where the child process starts)."""
    problems = []
    for name in INPUT_PATHS:
        value = str(values.get(name) or "")
        if not value or (cwd / value).expanduser().exists():
            continue
        hint = " (a Hugging Face model id is fine if that is what you meant)" if name == "model_path" else ""
        problems.append(f"{name}: {value} does not exist under {cwd}{hint}")
    return problems


def _choices() -> dict[str, tuple[str, ...]]:
    from workbench.train import config as c

    return {
        "estimator": c.ESTIMATORS,
        "episode_kind": c.EPISODE_KINDS,
        "lr_scheduler_type": c.SCHEDULES,
        "vllm_mode": ("colocate", "server"),
    }


def _field_widget(f: dataclasses.Field, value: Any) -> w.ValueWidget:
    kw = {
        "description": f.name,
        "tooltip": f.metadata.get("help", ""),
        "style": {"description_width": "220px"},
        "layout": w.Layout(width="560px"),
    }
    choices = _choices().get(f.name)
    if choices:
        return w.Dropdown(options=list(choices), value=value, **kw)
    if f.name == "reward":
        from workbench.rewards import list_presets

        return w.Combobox(options=list_presets(), value=str(value), ensure_option=False, **kw)
    if isinstance(value, bool):
        return w.Checkbox(value=value, **kw)
    if isinstance(value, int):
        return w.IntText(value=value, **kw)
    if isinstance(value, float):
        return w.FloatText(value=value, **kw)
    if isinstance(value, (dict, list)):
        return w.Textarea(value=json.dumps(value), **kw)
    return w.Text(value=str(value), **kw)


class TrainingLauncher(w.VBox):
    """Configure, launch, watch and stop a training run (see the module docstring)."""

    def __init__(
        self, config: TrainConfig | str | os.PathLike[str] | None = None, *, refresh_s: float = 2.0, **overrides: Any
    ) -> None:
        from workbench.train import TrainConfig

        if config is None:
            config = TrainConfig(**overrides)
        elif not isinstance(config, TrainConfig):
            config = TrainConfig.load(Path(config), **overrides)
        elif overrides:
            config = config.replace(**overrides)
        self.refresh_s = refresh_s
        self.handle: TrainingHandle | None = None
        self._ticker: Ticker | None = None
        self._lock = threading.Lock()
        self.fields = {f.name: _field_widget(f, getattr(config, f.name)) for f in dataclasses.fields(TrainConfig)}
        self.launch_button = w.Button(description="launch", button_style="success", icon="play")
        self.stop_button = w.Button(description="stop", button_style="danger", icon="stop", disabled=True)
        self.status = w.HTML("<i>not started</i>")
        self.curves = PlotPane(
            _figures.metric_curves(
                _no_metrics(), title="training", empty=f"after launch: {', '.join(CURVES)} per step"
            ),
            name="training",
        )
        self.samples_view = w.HTML()
        self.log_view = w.HTML()
        self.launch_button.on_click(lambda _: self._guard(self.launch))
        self.stop_button.on_click(lambda _: self._guard(self.stop))
        main = [self.fields[n] for n in MAIN_FIELDS]
        advanced = w.Accordion(
            [w.VBox([x for n, x in self.fields.items() if n not in MAIN_FIELDS])],
            titles=("advanced",),
            selected_index=None,
        )
        for name in INPUT_PATHS:
            self.fields[name].observe(lambda _: self._check_inputs(), names="value")
        super().__init__(
            [
                w.VBox(main),
                advanced,
                w.HBox([self.launch_button, self.stop_button, self.status]),
                self.curves.widget,
                self.samples_view,
                self.log_view,
            ]
        )
        self._check_inputs()

    @property
    def config(self) -> TrainConfig:
        """The `TrainConfig` the form describes (ConfigError names a bad field)."""
        from workbench.train import TrainConfig

        values: dict[str, Any] = {}
        for name, widget in self.fields.items():
            value = widget.value
            if isinstance(widget, w.Textarea):
                try:
                    value = json.loads(value or "{}")
                except ValueError as exc:
                    raise ConfigError(f"TrainConfig.{name}: not valid JSON ({exc})") from None
            values[name] = value
        return TrainConfig(**values)

    def set(self, **values: Any) -> None:
        """Fill form fields by name, e.g. `set(max_steps=5, estimator="hrpo")`."""
        unknown = sorted(set(values) - set(self.fields))
        if unknown:
            raise ConfigError(f"TrainConfig has no field(s) {unknown}; see TrainConfig.fields_help()")
        for name, value in values.items():
            self.fields[name].value = json.dumps(value) if isinstance(value, dict) else value

    def _check_inputs(self) -> list[str]:
        """Show, before launch, the input paths the run would not find."""
        problems = missing_inputs({n: self.fields[n].value for n in INPUT_PATHS}, Path.cwd())
        self.status.value = "<br>".join(f'<span style="color:#9a6700">{_render.esc(p)}</span>' for p in problems) or (
            "<i>not started</i>"
        )
        return problems

    # -- running -----------------------------------------------------------------------------
    def launch(self) -> TrainingHandle:
        """Start training with the form's config in a child process; curves refresh live."""
        from workbench.train.launch import launch

        if self.handle is not None and self.handle.status in ("starting", "running"):
            raise ConfigError("a run is already going; stop() it first")
        self.handle = launch(self.config)
        self.launch_button.disabled, self.stop_button.disabled = True, False
        self.log_view.value = ""
        self.refresh()
        if self.refresh_s:
            self.auto_refresh(self.refresh_s)
        return self.handle

    def stop(self, grace_s: float = 30.0) -> str:
        """Ask the run to stop after its current step (it saves), then terminate it."""
        if self.handle is None:
            raise ConfigError("nothing to stop; launch() first")
        status = self.handle.stop(grace_s)
        self.refresh()
        return status

    def metrics(self) -> pd.DataFrame:
        """The run's logged metrics, long format (step, name, value)."""
        import pandas as pd

        rows = self.handle.metrics() if self.handle is not None else []
        long = [
            (r["step"], k, v)
            for r in rows
            for k, v in r.items()
            if k not in ("step", "max_steps", "time") and isinstance(v, (int, float))
        ]
        return pd.DataFrame(long, columns=["step", "name", "value"])

    def refresh(self) -> str:
        """Re-read status, metrics and samples; stop auto-refresh once the run has ended."""
        with self._lock:
            if self.handle is None:
                return "not started"
            status = self.handle.status
            metrics = self.metrics()
            names = [n for n in (*CURVES, *ASYNC_CURVES) if n in set(metrics["name"])]
            self.curves.update(_figures.metric_curves(metrics, names, title="training"))
            last = int(metrics["step"].max()) if len(metrics) else 0
            colour = {"failed": "#cf222e", "finished": "#1a7f37", "stopped": "#9a6700"}.get(status, "")
            self.status.value = (
                f'<b style="color:{colour}">{status}</b> · step {last} / '
                f"{self.fields['max_steps'].value} · {self.handle.output_dir}<br>logs: "
                + " · ".join(f"{k} {_render.esc(v)}" for k, v in self.config.log_locations().items())
            )
            if status == "failed":
                self.log_view.value = (
                    "<b>log tail</b>" + _render.pre(self.handle.log_tail()) + _render.esc(self.handle.error or "")
                )
            self._show_samples(self.handle)
            if status not in ("starting", "running"):
                self.launch_button.disabled, self.stop_button.disabled = False, True
            return status

    def auto_refresh(self, seconds: float | None = 2.0) -> Ticker | None:
        """Refresh every `seconds` until the run ends; 0/None stops it now."""
        self._ticker = restart_ticker(self._ticker, lambda: self.refresh() in ("starting", "running"), seconds)
        return self._ticker

    def _show_samples(self, handle: TrainingHandle, n: int = 5) -> None:
        path = self.fields["store_path"].value
        if not path:
            return
        from workbench.widgets._source import open_store

        try:
            store = open_store(path)
        except WorkbenchError:
            return  # the run has not written its store yet
        df = store.query()
        run_id = self.fields["run_id"].value or os.path.basename(str(handle.output_dir))
        df = (df[df["run_id"] == run_id] if (df["run_id"] == run_id).any() else df).tail(n)
        items = "".join(
            f"<li><code>{r.id[:8]}</code> {_render.esc(str(r.question)[:100])} → "
            f"{_render.esc(r.final_answer or '—')} (reward {_render.number(r.reward)})</li>"
            for r in df.itertuples()
        )
        self.samples_view.value = f"<b>latest trajectories</b><ul class='wb-samples'>{items}</ul>"
        store.close()

    def _guard(self, fn: Any) -> None:
        try:
            fn()
        except WorkbenchError as exc:
            self.status.value = f'<span style="color:#cf222e">{_render.esc(exc)}</span>'


def _no_metrics() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=["step", "name", "value"])
