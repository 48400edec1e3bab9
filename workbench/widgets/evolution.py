"""`EvolutionDashboard`: a proposer/solver self-evolution run, per iteration and hop count.

    from workbench.widgets import EvolutionDashboard
    dash = EvolutionDashboard("runs/evolve")   # read-only; dash.auto_refresh(10) while it runs
    dash.table                                 # iteration, hops, valid share, proposer reward, difficulty, pass rate
    dash.samples(iteration=2)                  # the questions proposed in iteration 2, k of n solved
    dash.open_point("difficulty", 2, 2)        # what a click does: that cell's questions, here and in the viewer

Proposer trajectories (role="proposer") carry `metadata["iteration"]` and rewards such as
"difficulty" and "format"; solver trajectories name their proposer in `lineage["origin"]`, so
a solver attempt counts toward its proposer's iteration and hop count. A question is valid when it
passed its mode's gate (`proposal_valid`: Dr. Zero's format score > 0, else a question and an answer
not given away in it); k of n is how many of the attempts its difficulty was computed from
(`metadata["solver_correct"]`) were right. A QA-synthesis run
(role="synthesizer", `workbench.synth`) adds its acceptance rate and difficulty (`synthesis_table`).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench.widgets import _figures, _render
from workbench.widgets._attempts import proposal_valid, questions_html, solved_of, solved_text
from workbench.widgets._plots import FigureGrid
from workbench.widgets._source import Ticker, open_store, restart_ticker

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store
    from workbench.widgets.viewer import TrajectoryViewer

TABLE_COLUMNS = [
    "iteration",
    "hops",
    "questions",
    "valid_share",
    "proposer_reward",
    "difficulty",
    "format",
    "attempts",
    "solver_pass_rate",
]


PROPOSER_COLUMNS = [
    "id",
    "iteration",
    "hops",
    "question",
    "answer",
    "valid",
    "k",
    "n",
    "reward",
    "difficulty",
    "format",
]
CLICKABLE = ("proposer_reward", "valid_share", "difficulty", "solver_pass_rate")
"""The per-iteration figures whose points open the trajectories behind them."""


def proposer_frame(store: Store) -> pd.DataFrame:
    """One row per proposer trajectory: id, iteration, hops, question, answer, valid, k of n solved,
    reward and components."""
    import pandas as pd

    rows = []
    for t in store.iter_trajectories(role="proposer"):
        iteration = t.metadata.get("iteration", t.task.metadata.get("iteration"))
        hops = t.metadata.get("hops", t.hops)
        k, n = solved_of(t)
        rows.append(
            {
                "id": t.id,
                "iteration": None if iteration is None else int(iteration),
                "hops": None if hops is None else int(hops),
                "question": t.metadata.get("question") or t.task.question,
                "answer": t.final_answer,
                "valid": proposal_valid(t),
                "k": k,
                "n": n,
                "reward": t.reward,
                "difficulty": t.rewards.get("difficulty"),
                "format": t.rewards.get("format"),
            }
        )
    frame = pd.DataFrame(rows, columns=PROPOSER_COLUMNS)
    return frame.astype({"k": "Int64", "n": "Int64"})


def evolution_table(store: Store, pass_threshold: float = _figures.PASS_THRESHOLD) -> pd.DataFrame:
    """Per (iteration, hops): questions proposed, the share of them valid, mean proposer
    reward/difficulty/format, solver attempts on those questions and their pass rate (total reward ≥
    `pass_threshold`)."""
    import pandas as pd

    props = proposer_frame(store)
    if props.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    props["iteration"] = props["iteration"].fillna(0).astype(int)
    solvers = store.query(role="solver")
    solvers = solvers[solvers["origin_id"].isin(set(props["id"]))]
    solvers = solvers.merge(
        props[["id", "iteration", "hops"]].rename(columns={"id": "origin_id", "hops": "p_hops"}), on="origin_id"
    )
    solvers["passed"] = (solvers["reward"].fillna(float("-inf")) >= pass_threshold).astype(float)
    keys = ["iteration", "hops"]
    table = (
        props.groupby(keys, dropna=False)
        .agg(
            questions=("id", "size"),
            valid_share=("valid", "mean"),
            proposer_reward=("reward", "mean"),
            difficulty=("difficulty", "mean"),
            format=("format", "mean"),
        )
        .reset_index()
    )
    attempts = (
        solvers.drop(columns="hops")
        .rename(columns={"p_hops": "hops"})
        .groupby(keys)
        .agg(attempts=("passed", "size"), solver_pass_rate=("passed", "mean"))
        .reset_index()
    )
    table = table.merge(attempts, on=keys, how="left")
    table["attempts"] = table["attempts"].fillna(0).astype(int)
    return table[TABLE_COLUMNS].sort_values(keys).reset_index(drop=True)


SYNTHESIS_COLUMNS = ["iteration", "hops", "syntheses", "acceptance_rate", "difficulty", "edit_keep_rate"]


def synthesis_table(store: Store) -> pd.DataFrame:
    """Per (iteration, hops of the final QA) of a QA-synthesis run (role "synthesizer"): syntheses,
    the share accepted, mean difficulty (1 − direct accuracy) of the accepted ones, edits kept / tried."""
    import pandas as pd

    rows = []
    for t in store.iter_trajectories(role="synthesizer"):
        rec = t.metadata.get("synthesis") or {}
        acc = rec.get("direct_accuracy")
        rows.append(
            {
                "iteration": int(t.metadata.get("iteration") or 0),
                "hops": int(rec.get("hops") or 0),
                "accepted": float(bool(rec.get("accepted"))),
                "difficulty": 1.0 - float(acc) if rec.get("accepted") and acc is not None else None,
                "edits": int(rec.get("edits") or 0),
                "kept": int(rec.get("kept_edits") or 0),
            }
        )
    if not rows:
        return pd.DataFrame(columns=SYNTHESIS_COLUMNS)
    df = pd.DataFrame(rows)
    table = (
        df.groupby(["iteration", "hops"])
        .agg(
            syntheses=("accepted", "size"),
            acceptance_rate=("accepted", "mean"),
            difficulty=("difficulty", "mean"),
            edits=("edits", "sum"),
            kept=("kept", "sum"),
        )
        .reset_index()
    )
    table["edit_keep_rate"] = table["kept"] / table["edits"].where(table["edits"] > 0)
    return table[SYNTHESIS_COLUMNS]


def evolution_figures(store: Store, pass_threshold: float = _figures.PASS_THRESHOLD) -> dict[str, Any]:
    """The dashboard's plots, keyed by name (also used by `workbench report`). In the per-iteration
    plots (`CLICKABLE`) each point's customdata is `[iteration, hops]`."""
    table = evolution_table(store, pass_threshold)
    metrics = store.metrics()
    curves = (
        metrics[metrics["name"].str.contains("entropy|length", case=False, regex=True)] if len(metrics) else metrics
    )
    per_iter = {"x_title": "iteration (count)"}
    extra = _synthesis_figures(synthesis_table(store), per_iter)
    return {
        **extra,
        "proposer_reward": _figures.lines_by_group(
            table,
            "iteration",
            "proposer_reward",
            "hops",
            "proposer reward per iteration",
            y_title="mean proposer reward (spec units)",
            **per_iter,
        ),
        "valid_share": _figures.lines_by_group(
            table,
            "iteration",
            "valid_share",
            "hops",
            "valid questions per iteration",
            y_title="valid / proposed (0–1)",
            **per_iter,
        ),
        "difficulty": _figures.lines_by_group(
            table,
            "iteration",
            "difficulty",
            "hops",
            "difficulty reward per iteration",
            y_title="mean difficulty reward (0–1)",
            **per_iter,
        ),
        "solver_pass_rate": _figures.lines_by_group(
            table,
            "iteration",
            "solver_pass_rate",
            "hops",
            "solver pass rate per iteration",
            y_title=f"pass rate (share ≥ {pass_threshold:g})",
            **per_iter,
        ),
        "entropy_length": _figures.step_curves(curves, store.events(kind="iteration_start")),
    }


def _synthesis_figures(synth: Any, per_iter: dict[str, str]) -> dict[str, Any]:
    """QA synthesis's acceptance rate and difficulty per iteration (none when the run synthesized nothing)."""
    if synth.empty:
        return {}
    return {
        "synthesis_acceptance": _figures.lines_by_group(
            synth,
            "iteration",
            "acceptance_rate",
            "hops",
            "QA synthesis: acceptance rate per iteration",
            y_title="accepted / syntheses (0–1)",
            **per_iter,
        ),
        "synthesis_difficulty": _figures.lines_by_group(
            synth,
            "iteration",
            "difficulty",
            "hops",
            "QA synthesis: difficulty of accepted QAs",
            y_title="1 − no-tool accuracy (0–1)",
            **per_iter,
        ),
    }


def _cell(props: pd.DataFrame, iteration: Any, hops: Any) -> pd.DataFrame:
    if props.empty:
        return props
    return props[
        (props["iteration"].fillna(0).astype(int) == int(iteration))
        & (props["hops"].astype("Int64") == int(hops)).fillna(False)
    ]


def cell_questions(store: Store, iteration: Any, hops: Any) -> pd.DataFrame:
    """The questions of one (iteration, hops) cell, one row per proposer: id, question, answer, valid,
    k of n solved, difficulty and reward; valid ones first, then by difficulty."""
    cell = _cell(proposer_frame(store), iteration, hops)
    cols = ["id", "question", "answer", "valid", "k", "n", "difficulty", "reward"]
    return cell.sort_values(["valid", "difficulty"], ascending=False, na_position="last")[cols].reset_index(drop=True)


def trajectories_behind(store: Store, figure: str, iteration: Any, hops: Any) -> list[str]:
    """Ids of the trajectories a point of `figure` summarises: the solver attempts on that
    iteration's questions with that hop count for "solver_pass_rate", else the proposers."""
    props = _cell(proposer_frame(store), iteration, hops)
    if figure != "solver_pass_rate":
        return props["id"].tolist()
    solvers = store.query(role="solver", origin=props["id"].tolist()) if len(props) else props
    return solvers["id"].tolist() if len(solvers) else []


class EvolutionDashboard(w.VBox):
    """Plots and a table of a proposer/solver run (see the module docstring). Clicking a point
    opens a `TrajectoryViewer` below the plots, filtered to the trajectories behind it."""

    def __init__(
        self,
        source: Store | str | os.PathLike[str],
        *,
        pass_threshold: float = _figures.PASS_THRESHOLD,
        **kwargs: Any,
    ) -> None:
        self.store = open_store(source)
        self.pass_threshold = pass_threshold
        self._lock = threading.Lock()
        self._ticker: Ticker | None = None
        self.plots = FigureGrid(columns=2)
        self.panes = self.plots.panes  # name -> pane; `.figure` is the figure shown
        self.plots.on_click(lambda name, point: self._on_click(name, point))
        self.viewer: TrajectoryViewer | None = None  # made on the first click
        self.viewer_box = w.VBox()
        self.cell_view = w.HTML()  # the clicked cell's questions, each with k of n solved
        self.table_view = w.HTML()
        self.iteration_menu = w.Dropdown(description="iteration", options=[])
        self.samples_view = w.HTML()
        self.refresh_button = w.Button(description="refresh")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.iteration_menu.observe(lambda _: self._show_samples(), names="value")
        hint = w.HTML("<span style='color:#57606a;font-size:12px'>click a point to open its trajectories below</span>")
        super().__init__(
            [
                w.HBox([self.refresh_button, hint]),
                self.plots,
                self.cell_view,
                self.viewer_box,
                self.table_view,
                self.iteration_menu,
                self.samples_view,
            ],
            **{"layout": w.Layout(width="100%"), **kwargs},
        )
        self.refresh()

    def refresh(self) -> pd.DataFrame:
        """Re-read the store and redraw; returns the per-iteration table."""
        with self._lock:
            self.table = evolution_table(self.store, self.pass_threshold)
            self.plots.update_many(evolution_figures(self.store, self.pass_threshold))
            self.table_view.value = self.table.to_html(
                index=False, float_format="{:.3f}".format, na_rep="—", classes="wb-evolution"
            )
            iterations = sorted(self.table["iteration"].unique().tolist())
            keep = self.iteration_menu.value
            self.iteration_menu.options = iterations
            if iterations:
                self.iteration_menu.value = keep if keep in iterations else iterations[-1]
            self._show_samples()
            return self.table

    def open_point(self, figure: str, iteration: int, hops: int) -> TrajectoryViewer:
        """Show the trajectories behind one point (what a click does) in the viewer, and the cell's
        questions with k of n solved above it; returns the viewer."""
        from workbench.widgets.viewer import TrajectoryViewer

        ids = trajectories_behind(self.store, figure, iteration, hops)
        cell = cell_questions(self.store, iteration, hops)
        what = "solver attempts" if figure == "solver_pass_rate" else "proposers"
        hop_count = f"{hops} hop{'' if hops == 1 else 's'}"
        where = f"iteration {iteration} · {hop_count}"
        k, n = cell["k"].sum(), cell["n"].sum()
        summary = f"{int(cell['valid'].sum())} of {len(cell)} valid, {int(k)} of {int(n)} attempts solved"
        label = f"{figure.replace('_', ' ')} · {where}: {len(ids)} {what} ({summary})"
        self.cell_view.value = questions_html(cell, f"questions · {where}")
        if self.viewer is None:
            self.viewer = TrajectoryViewer(self.store)
            self.viewer_box.children = [self.viewer]
        self.viewer.show_ids(ids, label)
        return self.viewer

    def samples(self, iteration: int, per_hop: int = 3) -> pd.DataFrame:
        """Up to `per_hop` proposed questions per hop count in `iteration`, best reward first."""
        props = proposer_frame(self.store)
        props = props[props["iteration"] == iteration].sort_values("reward", ascending=False)
        return (
            props.groupby("hops", dropna=False).head(per_hop).sort_values(["hops", "reward"], ascending=[True, False])
        )

    def auto_refresh(self, seconds: float | None = 10.0) -> Ticker | None:
        """Redraw every `seconds` on a background thread; 0/None stops it."""
        self._ticker = restart_ticker(self._ticker, self.refresh, seconds)
        return self._ticker

    def _on_click(self, name: str, point: dict[str, Any]) -> None:
        data = point.get("customdata")
        if isinstance(data, list) and len(data) == 2 and None not in data:
            self.open_point(name, int(data[0]), int(data[1]))

    def _show_samples(self) -> None:
        if self.iteration_menu.value is None:
            self.samples_view.value = "<i>no proposer trajectories yet</i>"
            return
        rows = self.samples(self.iteration_menu.value)
        items = "".join(
            f"<li>{_render.badge(_render.number(r.hops, '.0f') + ' hops', '#8250df')} "
            f"{_render.esc(r.question)} "
            f"<span class='wb-solved' style='color:#57606a'>({solved_text(r.k, r.n)}; "
            f"reward {_render.number(r.reward)})</span></li>"
            for r in rows.itertuples()
        )
        self.samples_view.value = f"<b>sample questions</b><ul class='wb-samples'>{items}</ul>"
