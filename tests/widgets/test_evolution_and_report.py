"""EvolutionDashboard's per-iteration table and `workbench report`'s offline HTML."""

from __future__ import annotations

import argparse
import json
import re

import pytest

from workbench.cli.widgets import register
from workbench.store import Store
from workbench.widgets import EvolutionDashboard, report_html
from workbench.widgets.evolution import evolution_table
from workbench.widgets.report import report_data


@pytest.fixture
def evolve_run(tmp_path, make_traj):
    """Two iterations x two hop counts; iteration 2's solvers pass more often; logged metrics."""
    run_dir = tmp_path / "evolve"
    with Store(run_dir) as store:
        for it in (1, 2):
            for hops in (1, 2):
                for q in range(2):
                    n = it * 100 + hops * 10 + q
                    prop = make_traj(n, role="proposer", hops=hops, reward=0.1 * it + 0.01 * hops)
                    prop.metadata = {"iteration": it, "hops": hops}
                    prop.rewards = {"difficulty": 0.2 * it, "format": 1.0, "total": prop.reward}
                    store.write(prop)
                    for k in range(4):
                        passed = k < it + (hops == 1)  # it1: 2/1 of 4, it2: 3/2 of 4
                        store.write(make_traj(n * 10 + k, hops=hops, origin=prop.id, reward=1.0 if passed else 0.0))
        for it in (1, 2):  # steps restart at 1 in each iteration
            store.log_event("evolve", "iteration_start", {"iteration": it})
            for step in (1, 2, 3):
                store.log_metrics(
                    "evolve/solver",
                    step,
                    {"entropy": 2.0 - step * 0.1 - it, "completions/mean_length": 40 + step, "loss": 0.5},
                )
    return run_dir


def test_table_counts_questions_attempts_and_pass_rates(evolve_run):
    with Store.open_readonly(evolve_run) as store:
        table = evolution_table(store)
    assert table[["iteration", "hops"]].values.tolist() == [[1, 1], [1, 2], [2, 1], [2, 2]]
    assert table["questions"].tolist() == [2, 2, 2, 2] and table["attempts"].tolist() == [8] * 4
    assert table["solver_pass_rate"].tolist() == [0.5, 0.25, 0.75, 0.5]
    assert table["difficulty"].round(3).tolist() == [0.2, 0.2, 0.4, 0.4]
    assert table["proposer_reward"].round(3).tolist() == [0.11, 0.12, 0.21, 0.22]


def test_dashboard_plots_samples_and_refresh(evolve_run, make_traj, states):
    dash = EvolutionDashboard(evolve_run)
    rate = dash.panes["solver_pass_rate"].figure
    assert {t.name for t in rate.data} == {"hops=1", "hops=2"}
    assert list(rate.data[0].y) == [0.5, 0.75]
    assert [list(c) for c in rate.data[0].customdata] == [[1, 1], [2, 1]]  # (iteration, hops)
    for fig in (p.figure for p in dash.panes.values()):
        assert fig.layout.width is None and fig.layout.autosize  # takes its cell's width
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    assert dash.iteration_menu.value == 2 and "wb-samples" in dash.samples_view.value
    assert len(dash.samples(1, per_hop=1)) == 2
    for state in [dash.plots.get_state(), *states(dash.plots)]:
        json.dumps(state, allow_nan=False)

    with Store(evolve_run) as writer:  # iteration 3 arrives
        prop = make_traj(999, role="proposer", hops=1, reward=0.9)
        prop.metadata = {"iteration": 3}
        writer.write(prop)
    assert dash.refresh()["iteration"].max() == 3
    assert dash.iteration_menu.options[-1] == 3


def test_per_step_curves_use_one_global_step_axis(evolve_run):
    dash = EvolutionDashboard(evolve_run)
    fig = dash.panes["entropy_length"].figure
    lines = {t.name: t for t in fig.data}
    assert set(lines) == {"entropy", "completions/mean_length"}  # one run: no run name, units on the axes
    entropy = lines["entropy"]
    assert list(entropy.x) == [1, 2, 3, 4, 5, 6]  # no zig-zag back to 1
    assert lines["completions/mean_length"].yaxis == "y2"
    marks = [a.text for a in fig.layout.annotations]
    assert marks == ["iter 1", "iter 2"] and [s.x0 for s in fig.layout.shapes] == [0.5, 3.5]


def test_a_click_on_a_point_opens_the_trajectories_behind_it(evolve_run):
    dash = EvolutionDashboard(evolve_run)
    assert dash.viewer is None
    dash.plots.click("solver_pass_rate", {"x": 2, "y": 0.5, "customdata": [2, 2]})
    viewer = dash.viewer
    assert dash.viewer_box.children == (viewer,)
    with Store.open_readonly(evolve_run) as store:
        props = [
            t
            for t in store.iter_trajectories(role="proposer")
            if t.metadata["iteration"] == 2 and t.metadata["hops"] == 2
        ]
        expected = {a.id for p in props for a in store.children(p.id)}
    assert len(expected) == 8 and set(viewer.rows.id) == expected
    assert "iteration 2" in viewer.link_label and viewer.selected in expected
    dash.plots.click("difficulty", {"customdata": [1, 1]})  # proposers this time
    assert set(viewer.rows.role) == {"proposer"} and len(viewer.rows) == 2
    viewer.clear_link()
    assert len(viewer.rows) == len(viewer.table["id"])


@pytest.fixture
def graded_run(tmp_path, make_traj):
    """One iteration, 2 hops: three proposers, two valid with k of 5 solved (1 and 4), one invalid (format 0)."""
    run_dir = tmp_path / "graded"
    with Store(run_dir) as store:
        for n, (fmt, verdicts, difficulty) in enumerate(
            [(1.0, [1, 0, 0, 0, 0], 1.0), (0.9, [1, 1, 1, 1, 0], 0.25), (0.0, [], 0.0)]
        ):
            prop = make_traj(n, role="proposer", hops=2, reward=0.5 * fmt + difficulty)
            prop.metadata = {"iteration": 0, "hops": 2, "question": f"What is the capital of place {n}?"}
            prop.metadata["solver_correct"] = [float(v) for v in verdicts]
            prop.final_answer = f"Town {n}"
            prop.rewards = {"difficulty": difficulty, "format": fmt, "total": prop.reward}
            store.write(prop)
            for k, v in enumerate(verdicts):
                store.write(make_traj(n * 10 + k + 100, hops=2, origin=prop.id, reward=float(v)))
    return run_dir


def test_valid_share_and_k_of_n_per_cell(graded_run):
    dash = EvolutionDashboard(graded_run)
    [row] = dash.table.itertuples()
    assert (row.questions, row.valid_share, row.attempts) == (3, 2 / 3, 10)
    assert row.solver_pass_rate == 0.5  # 5 of 10 attempts
    valid = dash.panes["valid_share"].figure
    assert list(valid.data[0].y) == [2 / 3] and [list(c) for c in valid.data[0].customdata] == [[0, 2]]
    assert "1 of 5 solved" in dash.samples_view.value and "not attempted" in dash.samples_view.value

    dash.plots.click("valid_share", {"customdata": [0, 2]})
    viewer = dash.viewer
    assert set(viewer.rows.role) == {"proposer"} and len(viewer.rows) == 3
    assert "2 of 3 valid, 5 of 10 attempts solved" in viewer.link_label
    cell = dash.cell_view.value
    assert cell.count("<li>") == 3 and cell.count(">valid<") == 2 and cell.count(">invalid<") == 1
    assert cell.index("1 of 5 solved") < cell.index("4 of 5 solved") < cell.index("not attempted")  # by difficulty
    assert "Town 1" in cell and "What is the capital of place 2?" in cell


def test_cell_questions_and_validity_without_a_format_score(graded_run, make_traj):
    from workbench.widgets.evolution import cell_questions, proposal_valid, solved_text

    with Store.open_readonly(graded_run) as store:
        cell = cell_questions(store, 0, 2)
        assert cell["valid"].tolist() == [True, True, False]
        assert cell["k"].tolist()[:2] == [1, 4] and cell["n"].tolist()[:2] == [5, 5]
        assert cell["k"].isna().tolist() == [False, False, True]  # the invalid one was never attempted
        assert cell_questions(store, 1, 2).empty
    assert solved_text(2, 5) == "2 of 5 solved" and solved_text(None, None) == "not attempted"
    agent0 = make_traj(7, role="proposer")  # no format score: a question and an answer not in it
    agent0.rewards = {"total": 0.3}
    agent0.metadata = {"question": "Who founded Dreth?"}
    agent0.final_answer = "Ana Vel"
    assert proposal_valid(agent0)
    agent0.final_answer = "Dreth"  # given away in the question
    assert not proposal_valid(agent0)


def test_report_is_standalone_html(evolve_run):
    text = report_html(evolve_run, title="my run", max_trajectories=5)
    assert text.startswith("<!doctype html>") and "<title>my run</title>" in text
    assert report_data(text, "plotly").count("* plotly.js v") == 1  # inlined (gzipped), once
    assert not re.search(r"<script[^>]*\bsrc=", text)  # nothing to download
    assert report_html(evolve_run, title="my run", max_trajectories=5)[-4000:] == text[-4000:]  # same bytes
    data = report_data(text)
    assert data["viewer"]["table_json"]["n"] == 40 and len(data["details"]) == 5
    assert data["viewer"]["detail"]["id"] == data["viewer"]["selected"]
    names = [f["name"] for s in data["sections"] for f in s["figures"]]
    assert {"solver_pass_rate", "entropy_length", "proposer_pass_rate"} <= set(names)
    assert len(data["links"]["solver_pass_rate|2|1"]) == 8  # a click's trajectories
    assert len(data["links"]["valid_share|2|1"]) == 2 and "valid_share" in names
    assert "renderViewer" in text and "export default" not in text
    # training metrics: one global step axis across iterations, each iteration marked; a constant
    # metric is a line of text, not a figure; the plotly template is in the page once
    [training] = [s for s in data["sections"] if any(f["name"] == "entropy" for f in s["figures"])]
    entropy = next(f for f in training["figures"] if f["name"] == "entropy")
    assert entropy["data"][0]["x"] == [1, 2, 3, 4, 5, 6]
    assert [shape["x0"] for shape in entropy["layout"]["shapes"]] == [0.5, 3.5]
    assert "loss" not in names and "loss: 0.5 at every step (6 logged)" in text
    assert all("template" not in f["layout"] for s in data["sections"] for f in s["figures"]) and data["template"]


def test_report_command_writes_file(evolve_run, tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="workbench")
    register(parser.add_subparsers())
    out = tmp_path / "out" / "r.html"
    args = parser.parse_args(["report", str(evolve_run), "--out", str(out)])
    assert args.func(args) == 0
    assert out.stat().st_size > 1_000_000  # plotly.js is inside
    assert "wrote" in capsys.readouterr().out
    args = parser.parse_args(["report", str(tmp_path / "missing")])
    from workbench.errors import StoreError

    with pytest.raises(StoreError, match=r"no trajectories\.sqlite"):
        args.func(args)
