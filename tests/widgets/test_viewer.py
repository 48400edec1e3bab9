"""TrajectoryViewer against a real store: list, filters, search, sort, stepping, lineage, compare."""

from __future__ import annotations

import json

import pytest

from workbench.errors import ConfigError, StoreError
from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory
from workbench.widgets import TrajectoryViewer


def test_opens_with_the_first_trajectory_selected(run, states):
    run_dir, _ = run
    viewer = TrajectoryViewer(run_dir)
    assert viewer.store.readonly and len(viewer.rows) == 11 and viewer.table["n"] == 11
    first = viewer.rows.id[0]
    assert viewer.selected == first and viewer.detail["id"] == first and viewer.step == 0
    assert viewer.trajectory.id == first


def test_filters_search_and_sort_narrow_the_list(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.set_filters(role="proposer")
    assert set(viewer.rows.id) == set(ids["proposer"])
    assert viewer.selected in ids["proposer"]  # selection follows the filter
    viewer.filters = {"role": "solver", "hops": 2, "min_reward": 0.5}
    assert viewer.filters == {"role": "solver", "hops": 2, "min_reward": 0.5}
    assert (viewer.rows.reward >= 0.5).all() and len(viewer.rows) == 1
    viewer.filters = {"run": "run-b", "sort": "-reward"}
    assert viewer.rows.id.tolist() == ids["loose"][::-1]  # 0.5, 0.25, 0.0
    viewer.filters = {"search": "MUSEUM #51"}  # case-insensitive, in the question
    assert viewer.rows.id.tolist() == [ids["loose"][1]]
    with pytest.raises(ConfigError, match="not in this run"):
        viewer.set_filters(role="critic")
    with pytest.raises(ConfigError, match="unknown filter"):
        viewer.set_filters(colour="red")
    with pytest.raises(ConfigError, match="cannot sort"):
        viewer.set_filters(sort="colour")


def test_a_browser_side_filter_change_reaches_python(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.set_state({"query": {"role": "proposer", "sort": "-reward"}})  # as the front end does
    assert viewer.rows.id.tolist() == ids["proposer"][::-1]
    viewer.set_state({"selected": ids["solver"][2]})
    assert viewer.trajectory.id == ids["solver"][2] and viewer.detail["id"] == ids["solver"][2]


def test_stepping_and_the_turn_data(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.select(ids["solver"][1][:10])  # a unique prefix is enough
    steps = viewer.detail["steps"]
    assert [s["index"] for s in steps] == [0, 1, 2]
    one = steps[1]
    assert "x_1" in one["code"]["text"] and "x_1" in one["code_html"]
    assert any(p["kind"] == "image" and p["src"].startswith("data:image/png;base64,") for p in one["outputs"])
    assert {n["key"]: n["state"] for n in one["notepad"]} == {"facts": "changed", "plan": "same", "scratch": "removed"}
    assert one["tools"][0]["name"] == "search" and one["tools"][0]["ms"] == 10.0
    assert one["tokens"]["mask"] == [1] * 41 + [0] * 20 and steps[2]["output_cut"]
    assert viewer.next_step() == 1 and viewer.next_step() == 2 and viewer.next_step() == 2
    assert viewer.prev_step() == 1
    viewer.set_state({"step": 0})  # h in the browser
    assert viewer.step_index == 0


def test_origin_children_and_back(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.select(ids["solver"][4])
    assert viewer.detail["origin"]["id"] == ids["proposer"][1] and viewer.detail["origin"]["stored"]
    proposer = viewer.goto_origin()
    assert proposer.role == "proposer"
    assert [c["id"] for c in viewer.detail["children"]] == ids["solver"][3:6]
    viewer._on_message(viewer, {"action": "child", "id": ids["solver"][5]}, [])  # a click on an attempt
    assert viewer.trajectory.id == ids["solver"][5]
    assert viewer.go_back().id == ids["proposer"][1]
    assert viewer.go_back().id == ids["solver"][4]
    with pytest.raises(ConfigError, match="nothing to go back"):
        viewer.go_back()
    viewer.select(ids["loose"][0])
    assert viewer.detail["origin"] is None
    with pytest.raises(StoreError, match="no origin"):
        viewer.goto_origin()
    viewer._on_message(viewer, {"action": "origin"}, [])  # from the browser: shown, not raised
    assert "no origin" in viewer.notice


def test_compare_marks_the_first_divergent_turn(tmp_path):
    def traj(outputs: list[str], policy: str) -> Trajectory:
        t = Trajectory(task=Task("t1", "Q?", ["a"]), lineage={"policy": policy})
        t.steps = [Step(i, "", code=f"print({i})", observation_text=o) for i, o in enumerate(outputs)]
        return t

    a, b = traj(["1", "2", "3"], "base"), traj(["1", "2", "x", "4"], "tuned")
    with Store(tmp_path) as store:
        store.write_many([a, b])
    viewer = TrajectoryViewer(tmp_path)
    viewer.select(a.id)
    viewer._on_message(viewer, {"action": "pin", "id": a.id}, [])
    viewer.select(b.id)
    viewer._on_message(viewer, {"action": "compare"}, [])
    state = viewer.compare_state
    assert state["divergence"] == 2 and state["same_task"]
    assert state["left"]["id"] == a.id and state["right"]["id"] == b.id
    assert viewer.compare(a.id, a.id)["divergence"] is None
    viewer.close_compare()
    assert viewer.compare_state == {}


def test_proposer_rows_show_the_question_they_wrote(tmp_path, make_traj):
    prop = make_traj(1, role="proposer")
    prop.task.question = "You are an expert in question generation. Write a 2-hop question."
    prop.metadata = {"question": "Who directed the film released in 1990?"}
    broken = make_traj(2, role="proposer")
    broken.task.question = "You are an expert in question generation."
    with Store(tmp_path) as store:
        store.write_many([prop, broken])
    viewer = TrajectoryViewer(tmp_path)
    assert viewer.table["question"][0] == "Who directed the film released in 1990?"
    assert "expert" not in viewer.table["question"][1] and "no question" in viewer.table["question"][1]
    assert viewer.detail["question"].startswith("Who directed") and "expert" in viewer.detail["prompt"]


def test_rows_without_hops_or_rewards_do_not_break_the_viewer(tmp_path, states):
    with Store(tmp_path) as store:
        for i in range(3):
            store.write(Trajectory(task=Task(f"t{i}", f"q{i}"), termination="submitted", steps=[Step(0, "", code="1")]))
    viewer = TrajectoryViewer(tmp_path)
    assert viewer.table["hops"] == [None] * 3 and viewer.table["reward"] == [None] * 3
    assert viewer.choices["hops"] == [] and viewer.detail["hops"] is None
    viewer.set_filters(search="q1")
    assert len(viewer.rows) == 1
    for state in [viewer.get_state(), *states(viewer)]:
        table = state.pop("table_json", None)
        json.dumps(state, allow_nan=False)  # strict JSON: no NaN reaches the page
        if table is not None:
            json.loads(bytes(table), parse_constant=lambda c: pytest.fail(f"{c} in the table"))


def test_refresh_sees_a_run_that_is_still_writing(tmp_path, make_traj):
    run_dir = tmp_path / "live"
    with Store(run_dir) as writer:
        writer.write(make_traj(0, steps=1))
        viewer = TrajectoryViewer(run_dir)
        traj_id = viewer.rows.id[0]
        assert viewer.selected == traj_id and len(viewer.detail["steps"]) == 1

        growing = make_traj(0, steps=3)
        growing.id = traj_id
        writer.write(growing)  # the episode got two more steps
        writer.write(make_traj(1, role="proposer", reward=0.2))
        assert viewer.refresh() == 2
        assert viewer.table["n"] == 2 and viewer.choices["role"] == ["proposer", "solver"]
        assert len(viewer.detail["steps"]) == 3

        ticker = viewer.auto_refresh(0.05)
        writer.write(make_traj(2))
        import time

        deadline = time.time() + 10
        while len(viewer.rows) < 3 and time.time() < deadline:
            time.sleep(0.05)
        viewer.auto_refresh(None)
        assert len(viewer.rows) == 3 and ticker.error is None and not ticker.running


def test_a_missing_run_directory_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match=r"no trajectories\.sqlite"):
        TrajectoryViewer(tmp_path / "nope")


def test_neighbours_are_sent_ahead(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer._on_message(viewer, {"action": "prefetch", "ids": [*ids["solver"][:2], "missing"]}, [])
    sent = viewer.comm.messages[-1][1]["data"]["content"]
    assert sent["type"] == "details" and list(sent["items"]) == ids["solver"][:2]
    assert sent["items"][ids["solver"][0]]["steps"][0]["index"] == 0
