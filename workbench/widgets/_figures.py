"""Plotly figures from store DataFrames, shared by the dashboards and `workbench report`, and
`PlotPane`, which shows a figure in a notebook and swaps it in place on refresh.

    fig = reward_histogram(store.query())
    pane = PlotPane(fig); pane.update(reward_histogram(store.query(role="solver")))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

if TYPE_CHECKING:
    import pandas as pd

PASS_THRESHOLD = 0.5  # a rollout "passes" when its total reward is at least this
_LAYOUT = {"margin": {"l": 40, "r": 10, "t": 40, "b": 40}, "height": 320, "template": "plotly_white"}


def _figure(title: str, **layout: Any) -> go.Figure:
    return go.Figure(layout={**_LAYOUT, "title": {"text": title}, **layout})


def reward_histogram(df: "pd.DataFrame", column: str = "reward", *, compare: "pd.Series | None" = None,
                     title: str = "reward", names: tuple[str, str] = ("stored", "re-scored")) -> go.Figure:
    """Histogram of one reward column; with `compare`, the two overlaid (e.g. before/after)."""
    fig = _figure(title, barmode="overlay", xaxis_title="reward", yaxis_title="trajectories")
    fig.add_trace(go.Histogram(x=df[column].dropna(), name=names[0], opacity=0.6, nbinsx=20))
    if compare is not None:
        fig.add_trace(go.Histogram(x=compare.dropna(), name=names[1], opacity=0.6, nbinsx=20))
    return fig


def pass_rates(df: "pd.DataFrame", column: str = "reward",
               threshold: float = PASS_THRESHOLD) -> "pd.DataFrame":
    """Per hop count: attempts and the share whose `column` reaches `threshold`."""
    import pandas as pd

    rows = df.dropna(subset=["hops"])
    if rows.empty:
        return pd.DataFrame({"hops": [], "attempts": [], "pass_rate": []})
    passed = (rows[column].fillna(float("-inf")) >= threshold).astype(float)
    out = passed.groupby(rows["hops"].astype(int)).agg(["size", "mean"]).reset_index()
    return out.set_axis(["hops", "attempts", "pass_rate"], axis=1)


def pass_rate_by_hops(df: "pd.DataFrame", columns: Iterable[str] = ("reward",),
                      threshold: float = PASS_THRESHOLD, title: str = "pass rate by hops") -> go.Figure:
    """Bars of pass rate per hop count, one bar group per reward column."""
    fig = _figure(title, barmode="group", xaxis_title="hops", yaxis_title=f"share ≥ {threshold:g}",
                  yaxis_range=[0, 1])
    for column in columns:
        rates = pass_rates(df, column, threshold)
        fig.add_trace(go.Bar(x=rates["hops"], y=rates["pass_rate"], name=column,
                             customdata=rates["attempts"],
                             hovertemplate="hops %{x}: %{y:.2f} of %{customdata}<extra></extra>"))
    fig.update_xaxes(dtick=1)
    return fig


def rank_changes(before: "pd.Series", after: "pd.Series", top: int = 10) -> "pd.DataFrame":
    """The ids whose rank moved most between two score Series indexed by trajectory id."""
    import pandas as pd

    ranks = pd.DataFrame({"before": before, "after": after})
    ranks["rank_before"] = ranks["before"].rank(ascending=False, method="min")
    ranks["rank_after"] = ranks["after"].rank(ascending=False, method="min")
    ranks["moved"] = ranks["rank_before"] - ranks["rank_after"]
    ranks = ranks[ranks["moved"] != 0]
    return ranks.reindex(ranks["moved"].abs().sort_values(ascending=False).index).head(top)


def rank_change_figure(changes: "pd.DataFrame", title: str = "largest rank changes") -> go.Figure:
    fig = _figure(title, xaxis_title="places moved up (+) / down (−)", yaxis_autorange="reversed")
    labels = [str(i)[:8] for i in changes.index]
    fig.add_trace(go.Bar(x=changes["moved"], y=labels, orientation="h",
                         customdata=changes[["before", "after"]].to_numpy(),
                         hovertemplate="%{y}: %{customdata[0]:.3g} → %{customdata[1]:.3g}<extra></extra>"))
    return fig


def metric_curves(metrics: "pd.DataFrame", names: Iterable[str] | None = None,
                  title: str = "training metrics") -> go.Figure:
    """One line per metric name over steps (long-format metrics: step, name, value)."""
    fig = _figure(title, xaxis_title="step", height=360)
    if metrics.empty:
        return fig
    wanted = list(names) if names is not None else sorted(metrics["name"].unique())
    for name in wanted:
        rows = metrics[metrics["name"] == name].sort_values("step")
        if len(rows):
            fig.add_trace(go.Scatter(x=rows["step"], y=rows["value"], mode="lines+markers", name=name))
    return fig


def lines_by_group(df: "pd.DataFrame", x: str, y: str, group: str, title: str) -> go.Figure:
    """One line per value of `group` (e.g. hops), `y` over `x` (e.g. iteration)."""
    fig = _figure(title, xaxis_title=x, yaxis_title=y)
    for key, rows in df.dropna(subset=[y]).groupby(group):
        rows = rows.sort_values(x)
        fig.add_trace(go.Scatter(x=rows[x], y=rows[y], mode="lines+markers", name=f"{group}={key}"))
    fig.update_xaxes(dtick=1)
    return fig


class PlotPane:
    """A figure in a notebook: `go.FigureWidget` (updated in place) when anywidget is installed,
    else an Output widget that redraws. `.figure` is always the latest plain `go.Figure`."""

    def __init__(self, figure: go.Figure | None = None) -> None:
        import ipywidgets as w

        self.figure = figure if figure is not None else _figure("")
        try:
            self.widget: Any = go.FigureWidget(self.figure)
            self.live = True
        except ImportError:  # plotly's FigureWidget needs anywidget
            self.widget = w.Output()
            self.live = False
            self._draw()

    def update(self, figure: go.Figure) -> None:
        self.figure = figure
        if self.live:
            with self.widget.batch_update():
                self.widget.data = ()
                self.widget.add_traces(list(figure.data))
                self.widget.layout = figure.layout
        else:
            self._draw()

    def _draw(self) -> None:
        from IPython.display import clear_output, display

        with self.widget:
            clear_output(wait=True)
            display(self.figure)
