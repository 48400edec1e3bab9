"""`TrajectoryViewer`: a filterable table of a run's trajectories and a step-by-step view of one.

    from workbench.widgets import TrajectoryViewer
    viewer = TrajectoryViewer("runs/demo")         # read-only; works while the run writes
    viewer                                         # last expression in a cell: renders it
    viewer.set_filters(role="solver", min_reward=0.5)
    viewer.select(viewer.rows.id[0]); viewer.next_step()
    viewer.goto_origin()                           # solver attempt -> the proposer that asked
    viewer.go_back()
    viewer.compare(id_a, id_b)                     # side by side
    ticker = viewer.auto_refresh(5)                # re-read the store every 5 s; ticker.stop()
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench.errors import ConfigError, StoreError
from workbench.trajectory import Trajectory
from workbench.widgets import _render
from workbench.widgets._source import Ticker, open_store, restart_ticker

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

# filter name -> summary column; each is a dropdown whose first option (ALL) means no filter.
_DROPDOWNS = {"run": "run_id", "role": "role", "termination": "termination", "hops": "hops",
              "policy": "policy"}
FILTER_NAMES = (*_DROPDOWNS, "min_reward", "max_reward")
ALL = "(all)"  # the dropdown value meaning "no filter" (None would show an empty dropdown)


def _row_label(r: Any) -> str:
    reward = "—" if r.reward != r.reward or r.reward is None else f"{r.reward:.2f}"
    hops = "—" if r.hops is None or r.hops != r.hops else r.hops
    return (f"{r.id[:8]}  {r.role:<8.8} {r.termination or 'running':<11.11} hops={hops} "
            f"r={reward:<5} steps={r.num_steps:<2} {str(r.question)[:70]}")


class TrajectoryViewer(w.VBox):
    """Browse, filter and step through the trajectories of one run (see the module docstring)."""

    def __init__(self, source: "Store | str | os.PathLike[str]", **kwargs: Any) -> None:
        self.store = open_store(source)
        self._lock = threading.RLock()
        self._all: pd.DataFrame | None = None
        self._rows: pd.DataFrame | None = None
        self._traj: Trajectory | None = None
        self._step = 0
        self._history: list[str] = []
        self._pinned: str | None = None
        self._ticker: Ticker | None = None
        self._quiet = False  # set while the code itself moves widgets, so observers stay still

        dd = {"layout": w.Layout(width="auto"), "style": {"description_width": "initial"}}
        self.filter_widgets: dict[str, w.Dropdown] = {
            name: w.Dropdown(description=name, options=[ALL], value=ALL, **dd)
            for name in _DROPDOWNS}
        self.reward_filter = w.FloatRangeSlider(description="reward", min=0.0, max=1.0, step=0.01,
                                                value=(0.0, 1.0), continuous_update=False, **dd)
        self.table = w.Select(options=[], rows=10, layout=w.Layout(width="100%",
                                                                     font_family="monospace"))
        self.count = w.HTML()
        self.prev_button = w.Button(description="◀ prev step", tooltip="previous step")
        self.next_button = w.Button(description="next step ▶", tooltip="next step")
        self.step_label = w.HTML()
        self.origin_button = w.Button(description="↖ origin", tooltip="the trajectory this one came "
                                      "from (e.g. the proposer that wrote the question)")
        self.back_button = w.Button(description="↩ back", tooltip="back to where you jumped from")
        self.children_menu = w.Dropdown(description="attempts", options=[("—", None)], value=None, **dd)
        self.pin_button = w.Button(description="pin for compare")
        self.compare_button = w.Button(description="compare with pinned")
        self.header = w.HTML()
        self.step_view = w.HTML()
        self.compare_view = w.HTML()

        for widget in (*self.filter_widgets.values(), self.reward_filter):
            widget.observe(lambda _: self._on_filter(), names="value")
        self.table.observe(self._on_table, names="value")
        self.children_menu.observe(self._on_child, names="value")
        self.prev_button.on_click(lambda _: self.prev_step())
        self.next_button.on_click(lambda _: self.next_step())
        self.origin_button.on_click(lambda _: self._guard(self.goto_origin))
        self.back_button.on_click(lambda _: self._guard(self.go_back))
        self.pin_button.on_click(lambda _: self._pin())
        self.compare_button.on_click(lambda _: self._guard(lambda: self.compare(self._pinned)))

        filters = w.HBox([*self.filter_widgets.values(), self.reward_filter],
                         layout=w.Layout(flex_flow="row wrap"))
        nav = w.HBox([self.prev_button, self.next_button, self.step_label, self.origin_button,
                      self.back_button, self.children_menu, self.pin_button, self.compare_button],
                     layout=w.Layout(flex_flow="row wrap"))
        super().__init__([filters, self.count, self.table, nav, self.header, self.step_view,
                          self.compare_view], **kwargs)
        self.add_class("wb-viewer")
        self.refresh()

    # -- state -----------------------------------------------------------------------------
    @property
    def rows(self) -> "pd.DataFrame":
        """The summary rows the table shows now (after filters)."""
        assert self._rows is not None
        return self._rows

    @property
    def trajectory(self) -> Trajectory | None:
        return self._traj

    @property
    def step_index(self) -> int:
        return self._step

    @step_index.setter
    def step_index(self, index: int) -> None:
        if self._traj is None:
            raise ConfigError("no trajectory selected; call viewer.select(traj_id) first")
        self._step = max(0, min(int(index), max(len(self._traj.steps) - 1, 0)))
        self._render_step()

    @property
    def filters(self) -> dict[str, Any]:
        """Active filters, e.g. {"role": "solver", "min_reward": 0.5}."""
        out = {k: dd.value for k, dd in self.filter_widgets.items() if dd.value != ALL}
        lo, hi = self.reward_filter.value
        if lo > self.reward_filter.min:
            out["min_reward"] = lo
        if hi < self.reward_filter.max:
            out["max_reward"] = hi
        return out

    @filters.setter
    def filters(self, values: dict[str, Any]) -> None:
        """Replace every filter: unnamed ones are cleared."""
        self.set_filters(**{**dict.fromkeys(FILTER_NAMES), **values})

    def set_filters(self, **values: Any) -> None:
        """Set filter widgets (`run`, `role`, `termination`, `hops`, `policy`, `min_reward`,
        `max_reward`); None clears one. The table follows."""
        unknown = sorted(set(values) - set(FILTER_NAMES))
        if unknown:
            raise ConfigError(f"unknown filter(s) {unknown}; use any of {list(FILTER_NAMES)}")
        self._quiet = True
        try:
            for name, value in values.items():
                if name in _DROPDOWNS:
                    dd = self.filter_widgets[name]
                    allowed = [v for _, v in dd.options]
                    value = ALL if value is None else value
                    if value not in allowed:
                        raise ConfigError(f"{name}={value!r} is not in this run; choose one of "
                                          f"{[v for v in allowed if v != ALL]}")
                    dd.value = value
            lo, hi = self.reward_filter.value
            if "min_reward" in values:
                lo = self.reward_filter.min if values["min_reward"] is None else values["min_reward"]
            if "max_reward" in values:
                hi = self.reward_filter.max if values["max_reward"] is None else values["max_reward"]
            self.reward_filter.value = (lo, hi)
        finally:
            self._quiet = False
        self._on_filter()

    # -- reading the store -----------------------------------------------------------------
    def refresh(self) -> int:
        """Re-read the store (new trajectories, rewards, steps of a running episode). Returns the
        number of trajectories in the run."""
        with self._lock:
            df = self.store.query()
            self._all = df
            self._quiet = True
            try:
                for name, column in _DROPDOWNS.items():
                    dd = self.filter_widgets[name]
                    values = sorted({v for v in df[column].dropna().tolist() if v != ""}, key=str)
                    options = [(ALL, ALL)] + [(str(v), int(v) if name == "hops" else v)
                                              for v in values]
                    if options != list(dd.options):
                        keep = dd.value if dd.value in [v for _, v in options] else ALL
                        dd.options = options
                        dd.value = keep
                rewards = df["reward"].dropna()
                lo, hi = (float(rewards.min()), float(rewards.max())) if len(rewards) else (0.0, 1.0)
                hi = hi if hi > lo else lo + 1.0
                if (lo, hi) != (self.reward_filter.min, self.reward_filter.max):
                    was_full = self.filters.keys().isdisjoint({"min_reward", "max_reward"})
                    self.reward_filter.min, self.reward_filter.max = min(lo, 0.0), max(hi, 1.0)
                    if was_full:
                        self.reward_filter.value = (self.reward_filter.min, self.reward_filter.max)
            finally:
                self._quiet = False
            self._on_filter()
            if self._traj is not None and self._traj.id in self.store:
                fresh = self.store.get(self._traj.id)
                if fresh.to_dict() != self._traj.to_dict():
                    self._traj = fresh
                    self._step = min(self._step, max(len(fresh.steps) - 1, 0))
                    self._render_step()
            return len(df)

    def auto_refresh(self, seconds: float | None = 5.0) -> Ticker | None:
        """Re-read the store every `seconds` on a background thread; 0/None stops it."""
        self._ticker = restart_ticker(self._ticker, self.refresh, seconds)
        return self._ticker

    # -- selection and stepping ------------------------------------------------------------
    def select(self, traj_id: str, step: int = 0) -> Trajectory:
        """Show trajectory `traj_id` (or a unique prefix of it) at `step`."""
        with self._lock:
            full = traj_id if traj_id in self.store else self.store.resolve_id(traj_id)
            self._traj = self.store.get(full)
            self._step = 0
            self._quiet = True
            try:
                ids = [v for _, v in self.table.options]
                self.table.value = full if full in ids else None
                kids = self.store.query(origin=full)
                self.children_menu.options = [("—", None)] + [
                    (f"{k.id[:8]} r={k.reward:.2f}" if k.reward == k.reward else k.id[:8], k.id)
                    for k in kids.itertuples()]
                self.children_menu.value = None
            finally:
                self._quiet = False
            self.step_index = step
            return self._traj

    def next_step(self) -> int:
        if self._traj is not None:
            self.step_index = self._step + 1
        return self._step

    def prev_step(self) -> int:
        if self._traj is not None:
            self.step_index = self._step - 1
        return self._step

    def goto_origin(self) -> Trajectory:
        """Jump to the trajectory the current one came from (its `lineage["origin"]`)."""
        current = self._require()
        origin = self.store.origin(current.id)
        if origin is None:
            raise StoreError(f"trajectory {current.id[:8]} has no origin in this store (its lineage "
                             "names none, or the origin was written to another run)")
        self._history.append(current.id)
        return self.select(origin.id)

    def goto_child(self, traj_id: str) -> Trajectory:
        """Jump to one of the current trajectory's children (e.g. a solver attempt)."""
        self._history.append(self._require().id)
        return self.select(traj_id)

    def go_back(self) -> Trajectory:
        """Return to the trajectory you jumped from with `goto_origin` / `goto_child`."""
        if not self._history:
            raise ConfigError("nothing to go back to; goto_origin() or goto_child() first")
        return self.select(self._history.pop())

    def compare(self, a: str | None, b: str | None = None, step: int = -1) -> w.HTML:
        """Show two trajectories side by side (`b` defaults to the selected one); `step` picks one
        step in each, -1 shows all."""
        if a is None:
            raise ConfigError("nothing pinned to compare with; select one and press 'pin' first")
        left = self.store.get(a if a in self.store else self.store.resolve_id(a))
        right = self._require() if b is None else self.store.get(
            b if b in self.store else self.store.resolve_id(b))
        self.compare_view.value = _render.side_by_side_html(left, right, step)
        return self.compare_view

    # -- internals -------------------------------------------------------------------------
    def _require(self) -> Trajectory:
        if self._traj is None:
            raise ConfigError("no trajectory selected; call viewer.select(traj_id) first")
        return self._traj

    def _guard(self, fn: Any) -> None:
        try:
            fn()
        except (ConfigError, StoreError) as exc:
            self.step_label.value = f'<span style="color:#cf222e">{_render.esc(exc)}</span>'

    def _pin(self) -> None:
        self._pinned = self._require().id if self._traj else None

    def _on_filter(self) -> None:
        if self._quiet or self._all is None:
            return
        df = self._all
        f = self.filters
        for name, column in _DROPDOWNS.items():
            if name in f:
                df = df[df[column] == f[name]]
        if "min_reward" in f:
            df = df[df["reward"] >= f["min_reward"]]
        if "max_reward" in f:
            df = df[df["reward"] <= f["max_reward"]]
        self._rows = df.reset_index(drop=True)
        self._quiet = True
        try:
            keep = self.table.value
            self.table.options = [(_row_label(r), r.id) for r in self._rows.itertuples()]
            self.table.value = keep if keep in set(self._rows["id"]) else None
        finally:
            self._quiet = False
        self.count.value = f"<b>{len(self._rows)}</b> of {len(self._all)} trajectories"

    def _on_table(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"]:
            self.select(change["new"])

    def _on_child(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"]:
            self.goto_child(change["new"])

    def _render_step(self) -> None:
        traj = self._require()
        n = len(traj.steps)
        self.header.value = _render.header_html(traj)
        self.step_view.value = _render.step_html(traj, self._step)
        self.step_label.value = f"step <b>{self._step + 1 if n else 0}</b> / {n}" + (f" · reward {traj.steps[self._step].reward:.4g}" if n and traj.steps[self._step].reward is not None else "")
        self.prev_button.disabled = self._step <= 0
        self.next_button.disabled = self._step >= n - 1
        self.back_button.disabled = not self._history
        lineage = traj.lineage or {}
        self.origin_button.disabled = not (lineage.get("origin") or lineage.get("parent"))
