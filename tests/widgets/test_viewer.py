"""TrajectoryViewer against a real store: filters, stepping, notepad diff, lineage, compare."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError, StoreError
from workbench.store import Store
from workbench.widgets import TrajectoryViewer


def test_table_lists_every_trajectory_and_filters_narrow_it(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    assert len(viewer.rows) == 11 and len(viewer.table.options) == 11
    assert viewer.store.readonly

    viewer.filter_widgets["role"].value = "proposer"          # as a click in the dropdown would
    assert set(viewer.rows.id) == set(ids["proposer"])
    assert len(viewer.table.options) == 2

    viewer.set_filters(role="solver", hops=2)
    assert set(viewer.rows.role) == {"solver"} and set(viewer.rows.hops) == {2}
    viewer.set_filters(min_reward=0.5)
    assert viewer.filters == {"role": "solver", "hops": 2, "min_reward": 0.5}
    assert (viewer.rows.reward >= 0.5).all() and len(viewer.rows) == 1

    viewer.filters = {"run": "run-b"}
    assert viewer.filters == {"run": "run-b"}                 # the setter replaces all filters
    assert set(viewer.rows.id) == set(ids["loose"])
    with pytest.raises(ConfigError, match="not in this run"):
        viewer.set_filters(role="critic")
    with pytest.raises(ConfigError, match="unknown filter"):
        viewer.set_filters(colour="red")


def test_stepping_shows_code_output_and_notepad_changes(run, states):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    traj = viewer.select(ids["solver"][1][:10])              # a unique prefix is enough
    assert traj.id == ids["solver"][1] and viewer.step_index == 0
    assert "x_0" in viewer.step_view.value and viewer.prev_button.disabled
    assert 'class="wb-note wb-added" data-key="facts"' in viewer.step_view.value

    viewer.next_button.click()
    assert viewer.step_index == 1
    html = viewer.step_view.value
    assert "x_1" in html and "x_0" not in html
    assert "data:image/png;base64," in html                    # display_data rendered as an image
    assert 'wb-note wb-changed" data-key="facts"' in html      # a fact was appended
    assert 'wb-note wb-same" data-key="plan"' in html          # plan unchanged between 0 and 1
    assert 'wb-note wb-removed" data-key="scratch"' in html
    assert "completion tokens: <b>41</b>" in html
    # the change reached the front end through the comm
    assert any("x_1" in s.get("value", "") for s in states(viewer.step_view))

    assert viewer.next_step() == 2 and "output truncated" in viewer.step_view.value
    assert viewer.next_step() == 2 and viewer.next_button.disabled    # clamps at the last step
    assert viewer.prev_step() == 1


def test_origin_jump_and_back(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.select(ids["solver"][4])
    proposer = viewer.goto_origin()
    assert proposer.id == ids["proposer"][1] and proposer.role == "proposer"
    assert [v for _, v in viewer.children_menu.options][1:] == ids["solver"][3:6]
    viewer.children_menu.value = ids["solver"][5]             # jump to another attempt
    assert viewer.trajectory.id == ids["solver"][5]
    assert viewer.go_back().id == ids["proposer"][1]
    assert viewer.go_back().id == ids["solver"][4]
    with pytest.raises(ConfigError, match="nothing to go back"):
        viewer.go_back()
    viewer.select(ids["loose"][0])
    assert viewer.origin_button.disabled
    with pytest.raises(StoreError, match="no origin"):
        viewer.goto_origin()


def test_compare_side_by_side(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.select(ids["solver"][0])
    viewer.pin_button.click()
    viewer.select(ids["loose"][2])
    viewer.compare_button.click()
    html = viewer.compare_view.value
    assert "wb-compare" in html and ids["solver"][0] in html and ids["loose"][2] in html
    only_last = viewer.compare(ids["solver"][0], ids["solver"][1], step=2).value
    assert only_last.count('class="wb-step"') == 2


def test_refresh_sees_a_run_that_is_still_writing(tmp_path, make_traj):
    run_dir = tmp_path / "live"
    with Store(run_dir) as writer:
        writer.write(make_traj(0, steps=1))
        viewer = TrajectoryViewer(run_dir)
        traj_id = viewer.rows.id[0]
        viewer.select(traj_id)
        assert len(viewer.rows) == 1 and viewer.trajectory.steps.__len__() == 1

        growing = make_traj(0, steps=3)
        growing.id = traj_id
        writer.write(growing)                                  # the episode got two more steps
        writer.write(make_traj(1, role="proposer", reward=0.2))
        assert viewer.refresh() == 2
        assert len(viewer.table.options) == 2
        assert [v for _, v in viewer.filter_widgets["role"].options] == ["(all)", "proposer", "solver"]
        assert len(viewer.trajectory.steps) == 3 and not viewer.next_button.disabled

        ticker = viewer.auto_refresh(0.05)
        writer.write(make_traj(2))
        import time
        deadline = time.time() + 10
        while len(viewer.rows) < 3 and time.time() < deadline:
            time.sleep(0.05)
        viewer.auto_refresh(None)
        assert len(viewer.rows) == 3 and ticker.error is None and not ticker.running


def test_a_missing_run_directory_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="no trajectories.sqlite"):
        TrajectoryViewer(tmp_path / "nope")
