"""Plotly figures from store DataFrames, shared by the dashboards and `workbench report`.

Every figure is responsive (no fixed width: it takes its cell's width), names its axes with units
and puts a horizontal legend above the plot, where it never covers data. Show them in a notebook
with `FigureGrid` (`_plots.py`), which also reports clicks.

    fig = reward_histogram(store.query())
    fig = step_curves(store.metrics(), store.events(), ("entropy", "mean_length"))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from workbench.widgets._safe import finite, finite_figure

if TYPE_CHECKING:
    import pandas as pd

PASS_THRESHOLD = 0.5  # a rollout "passes" when its total reward is at least this
_LAYOUT: dict[str, Any] = {
    "margin": {"l": 56, "r": 16, "t": 64, "b": 48},
    "height": 320,
    "autosize": True,
    "template": "plotly_white",
    "font": {"size": 12},
    "legend": {
        "orientation": "h",
        "yanchor": "bottom",
        "y": 1.02,
        "xanchor": "left",
        "x": 0,
        "font": {"size": 11},
        "bgcolor": "rgba(255,255,255,0.8)",
    },
    "title": {"x": 0, "xanchor": "left", "y": 0.98, "yanchor": "top", "font": {"size": 14}},
}


def _figure(title: str, **layout: Any) -> go.Figure:
    return go.Figure(layout={**_LAYOUT, **layout, "title": {**_LAYOUT["title"], "text": title}})


def shared_template() -> dict[str, Any]:
    """The plotly template every figure here uses, as JSON (the report embeds it once)."""
    template: dict[str, Any] = finite(_figure("").to_plotly_json()["layout"].get("template", {}))
    return template


def _empty(fig: go.Figure, message: str) -> go.Figure:
    fig.add_annotation(
        text=message, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5, font={"color": "#57606a"}
    )
    return fig


def reward_histogram(
    df: pd.DataFrame,
    column: str = "reward",
    *,
    compare: pd.Series | None = None,
    title: str = "reward",
    names: tuple[str, str] = ("stored", "re-scored"),
) -> go.Figure:
    """Histogram of one reward column; with `compare`, the two overlaid (e.g. before/after)."""
    fig = _figure(title, barmode="overlay", xaxis_title="total reward (spec units)", yaxis_title="trajectories (count)")
    values = df[column].dropna() if column in df else df.iloc[:0]
    fig.add_trace(go.Histogram(x=values, name=names[0], opacity=0.6, nbinsx=20))
    if compare is not None:
        fig.add_trace(go.Histogram(x=compare.dropna(), name=names[1], opacity=0.6, nbinsx=20))
    if not len(values) and (compare is None or not compare.notna().any()):
        _empty(fig, "no rewards stored")
    return finite_figure(fig)


def pass_rates(df: pd.DataFrame, column: str = "reward", threshold: float = PASS_THRESHOLD) -> pd.DataFrame:
    """Per hop count: attempts and the share whose `column` reaches `threshold`."""
    import pandas as pd

    rows = df.dropna(subset=["hops"])
    if rows.empty:
        return pd.DataFrame({"hops": [], "attempts": [], "pass_rate": []})
    passed = (rows[column].astype(float).fillna(float("-inf")) >= threshold).astype(float)
    out = passed.groupby(rows["hops"].astype(int)).agg(["size", "mean"]).reset_index()
    return out.set_axis(["hops", "attempts", "pass_rate"], axis=1)


def pass_rate_by_hops(
    df: pd.DataFrame,
    columns: Iterable[str] = ("reward",),
    threshold: float = PASS_THRESHOLD,
    title: str = "pass rate by hops",
) -> go.Figure:
    """Bars of pass rate per hop count, one bar group per reward column."""
    fig = _figure(
        title,
        barmode="group",
        xaxis_title="hops (count)",
        yaxis_title=f"pass rate (share ≥ {threshold:g})",
        yaxis_range=[0, 1],
    )
    for column in columns:
        rates = pass_rates(df, column, threshold)
        fig.add_trace(
            go.Bar(
                x=rates["hops"],
                y=rates["pass_rate"],
                name=column,
                customdata=rates["attempts"],
                hovertemplate="hops %{x}: %{y:.2f} of %{customdata}<extra></extra>",
            )
        )
    fig.update_xaxes(dtick=1)
    return finite_figure(fig)


def rank_changes(before: pd.Series, after: pd.Series, top: int = 10) -> pd.DataFrame:
    """The ids whose rank moved most between two score Series indexed by trajectory id; ids
    missing a score on either side are left out (a missing score has no rank)."""
    import pandas as pd

    ranks = pd.DataFrame({"before": before, "after": after}).astype(float).dropna()
    ranks["rank_before"] = ranks["before"].rank(ascending=False, method="min")
    ranks["rank_after"] = ranks["after"].rank(ascending=False, method="min")
    ranks["moved"] = ranks["rank_before"] - ranks["rank_after"]
    ranks = ranks[ranks["moved"] != 0]
    return ranks.reindex(ranks["moved"].abs().sort_values(ascending=False).index).head(top)


def rank_change_figure(
    changes: pd.DataFrame, title: str = "largest rank changes", empty: str = "no rank changed"
) -> go.Figure:
    fig = _figure(
        title,
        xaxis_title="places moved (up +, down −)",
        yaxis_title="trajectory (id)",
        yaxis_autorange="reversed",
        showlegend=False,
    )
    labels = [str(i)[:8] for i in changes.index]
    fig.add_trace(
        go.Bar(
            x=changes["moved"],
            y=labels,
            orientation="h",
            name="rank change",
            customdata=changes[["before", "after"]].to_numpy(),
            hovertemplate="%{y}: %{customdata[0]:.3g} → %{customdata[1]:.3g}<extra></extra>",
        )
    )
    if changes.empty:
        _empty(fig, empty)
    return finite_figure(fig)


def metric_curves(
    metrics: pd.DataFrame,
    names: Iterable[str] | None = None,
    title: str = "training metrics",
    empty: str = "no metrics logged yet",
) -> go.Figure:
    """One line per metric name over optimizer steps (long-format metrics: step, name, value);
    `empty`: what the figure says while there are none."""
    fig = _figure(title, xaxis_title="optimizer step (count)", yaxis_title="value (metric units)", height=360)
    if metrics.empty:
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return _empty(fig, empty)
    wanted = list(names) if names is not None else sorted(metrics["name"].unique())
    for name in wanted:
        rows = metrics[metrics["name"] == name].sort_values("step")
        if len(rows):
            fig.add_trace(go.Scatter(x=rows["step"], y=rows["value"], mode="lines+markers", name=name))
    return finite_figure(fig)


def global_steps(metrics: pd.DataFrame) -> pd.DataFrame:
    """`metrics` with a `global_step` column: per run id, the logged steps numbered 1, 2, … in time
    order, so steps that restart at 1 in each iteration line up one after another."""
    df = metrics.sort_values(["time", "step"], kind="stable").copy()
    key = df["run_id"].astype(str) + "\x00" + df["time"].astype(str) + "\x00" + df["step"].astype(str)
    df["global_step"] = 0
    for _, rows in df.groupby("run_id", sort=False):
        ordinal = (~key[rows.index].duplicated()).cumsum()
        df.loc[rows.index, "global_step"] = ordinal.to_numpy()
    return df


def _unit(name: str) -> str:
    low = name.lower()
    if "entropy" in low:
        return "nats/token"
    if "length" in low or "tokens" in low:
        return "tokens"
    return "value"


def step_curves(
    metrics: pd.DataFrame, events: pd.DataFrame | None = None, title: str = "entropy and length per training step"
) -> go.Figure:
    """One line per (run id, metric) over a global step axis; entropy on the left axis (nats per
    token), lengths on the right (tokens); each iteration's first step marked by a dotted line."""
    fig = _figure(
        title,
        height=360,
        xaxis_title="training step (global, across iterations)",
        yaxis_title="entropy (nats/token)",
        yaxis2={"title": {"text": "length (tokens)"}, "overlaying": "y", "side": "right", "showgrid": False},
    )
    if metrics.empty:
        return finite_figure(_empty(fig, "no training steps logged yet"))
    df = global_steps(metrics)
    several_runs = df["run_id"].nunique() > 1  # one run: its name would only crowd the legend
    for (run_id, name), rows in df.groupby(["run_id", "name"], sort=True):
        unit = _unit(name)
        label = f"{str(run_id).rsplit('/', 1)[-1]} · {name}" if several_runs else str(name)
        fig.add_trace(
            go.Scatter(
                x=rows["global_step"],
                y=rows["value"],
                mode="lines+markers",
                name=label,
                yaxis="y2" if unit == "tokens" else "y",
                hovertemplate="step %{x}: %{y:.4g} " + unit + "<extra>" + label + "</extra>",
            )
        )
    _mark_iterations(fig, df, events)
    return finite_figure(fig)


def _mark_iterations(fig: go.Figure, df: pd.DataFrame, events: pd.DataFrame | None) -> None:
    """A dotted line and a label at each iteration's first global step."""
    for iteration, step in _iteration_starts(df, events):
        fig.add_vline(x=step - 0.5, line_dash="dot", line_color="#8c959f")
        fig.add_annotation(
            x=step - 0.5,
            y=1,
            yref="paper",
            text=f"iter {iteration}",
            showarrow=False,
            xanchor="left",
            yanchor="top",
            font={"size": 10, "color": "#57606a"},
        )


def metric_panels(metrics: pd.DataFrame, events: pd.DataFrame | None = None) -> tuple[dict[str, go.Figure], list[str]]:
    """The report's training metrics: a figure per metric that moves, on the global step axis with
    iterations marked (`step_curves`' axis), and a line of text per metric that never changes
    (a flat line at zero says nothing a sentence cannot)."""
    figures: dict[str, go.Figure] = {}
    constants: list[str] = []
    if metrics.empty:
        return figures, constants
    df = global_steps(metrics)
    for name, rows in df.groupby("name", sort=True):
        values = rows["value"].dropna()
        if values.nunique() <= 1:
            shown = f"{values.iloc[0]:.4g}" if len(values) else "no value"
            constants.append(f"{name}: {shown} at every step ({len(rows)} logged)")
            continue
        fig = _figure(str(name), xaxis_title="training step (global, across iterations)", yaxis_title=_unit(str(name)))
        for run_id, run_rows in rows.groupby("run_id", sort=True):
            fig.add_trace(
                go.Scatter(
                    x=run_rows["global_step"], y=run_rows["value"], mode="lines+markers", name=str(run_id) or str(name)
                )
            )
        fig.update_layout(showlegend=rows["run_id"].nunique() > 1)
        _mark_iterations(fig, rows, events)
        figures[str(name)] = finite_figure(fig)
    return figures, constants


def _iteration_starts(df: pd.DataFrame, events: pd.DataFrame | None) -> list[tuple[Any, int]]:
    """(iteration, first global step logged after it started) from `iteration_start` events."""
    if events is None or events.empty or df.empty:
        return []
    starts = events[events["kind"] == "iteration_start"]
    out = []
    for row in starts.itertuples():
        later = df[df["time"] >= row.time]
        if len(later):
            out.append(((row.payload or {}).get("iteration", "?"), int(later["global_step"].min())))
    return out


def lines_by_group(
    df: pd.DataFrame,
    x: str,
    y: str,
    group: str,
    title: str,
    *,
    x_title: str | None = None,
    y_title: str | None = None,
) -> go.Figure:
    """One line per value of `group` (e.g. hops), `y` over `x` (e.g. iteration). Each point's
    customdata is `[x, group]`, so a click names the cell of the table behind it."""
    fig = _figure(title, xaxis_title=x_title or x, yaxis_title=y_title or y)
    data = df.dropna(subset=[y]) if y in df else df.iloc[:0]
    for key, rows in data.groupby(group):
        rows = rows.sort_values(x)
        fig.add_trace(
            go.Scatter(
                x=rows[x],
                y=rows[y],
                mode="lines+markers",
                name=f"{group}={key}",
                customdata=[[xv, key] for xv in rows[x]],
                hovertemplate=f"{x} %{{x}}, {group}={key}: %{{y:.3g}}<br>click: open these trajectories<extra></extra>",
            )
        )
    if data.empty:
        _empty(fig, "nothing to plot yet")
    fig.update_xaxes(dtick=1)
    return finite_figure(fig)
