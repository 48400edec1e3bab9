"""The list filters by evolve iteration, training step and phase, in Python (`viewer.filter`,
`set_filters`) and in the browser alike (the same `query` trait, the same `apply_query` rule)."""

from __future__ import annotations

import json
import time

import pytest

from workbench.errors import ConfigError
from workbench.store import Store
from workbench.widgets import TrajectoryViewer


@pytest.fixture
def evolve_run(tmp_path, make_traj):
    """Two evolve iterations: a proposer and its probe per iteration (the lineage names the iteration),
    then the solver's training rollouts at steps 1 and 2 (only phase and step in the lineage)."""
    run = tmp_path / "evolve"
    ids: dict[str, str] = {}
    with Store(run) as store:
        for it in range(2):
            store.log_event("evolve", "iteration_start", {"iteration": it})
            base = 100 * (it + 1)
            prop = make_traj(base, role="proposer")
            prop.lineage.update(iteration=it)
            probe = make_traj(base + 1, origin=prop.id)
            probe.lineage.update(iteration=it)
            trained = [make_traj(base + 2 + s) for s in range(2)]
            for step, t in enumerate(trained, start=1):
                t.lineage.update(phase="solver_update", train_step=step)
                t.started_at = time.time()  # after its iteration started, before the next one
            store.write_many([prop, probe, *trained])
            ids |= {
                f"prop{it}": prop.id,
                f"probe{it}": probe.id,
                f"step1-{it}": trained[0].id,
                f"step2-{it}": trained[1].id,
            }
    return run, ids


def test_filter_by_iteration_training_step_and_phase(evolve_run):
    run, ids = evolve_run
    viewer = TrajectoryViewer(run)
    assert viewer.choices["phase"] == ["propose", "solver_update"]
    assert viewer.choices["iteration"] == [0, 1] and viewer.choices["train_step"] == [1, 2]
    assert viewer.filter(train_step=2).id.tolist() == [ids["step2-0"], ids["step2-1"]]
    assert viewer.filter(train_step=2, iteration=1).id.tolist() == [ids["step2-1"]]  # iteration from the events
    assert set(viewer.filter(phase="propose", iteration=0).id) == {ids["prop0"], ids["probe0"]}
    assert len(viewer.rows) == 8  # filter() leaves the list as it is
    viewer.set_filters(phase="solver_update", iteration=1)
    assert viewer.rows.id.tolist() == [ids["step1-1"], ids["step2-1"]] and viewer.selected == ids["step1-1"]


def test_the_browser_gets_the_stage_columns_and_applies_the_same_query(evolve_run, states):
    run, ids = evolve_run
    viewer = TrajectoryViewer(run)
    table = json.loads(viewer.table_json)
    at = {i: k for k, i in enumerate(table["id"])}
    k = at[ids["step2-1"]]
    assert table["train_step"][k] == 2 and table["iteration"][k] == 1
    assert table["phase"]["levels"][table["phase"]["codes"][k]] == "solver_update"
    viewer.set_state({"query": {"train_step": 1}})  # picked in the browser's dropdown
    assert viewer.rows.id.tolist() == [ids["step1-0"], ids["step1-1"]]


def test_a_stage_not_in_the_run_is_refused_with_the_choices(evolve_run):
    viewer = TrajectoryViewer(evolve_run[0])
    with pytest.raises(ConfigError, match=r"train_step=9 is not in this run; choose one of \[1, 2\]"):
        viewer.filter(train_step=9)
    with pytest.raises(ConfigError, match="unknown filter"):
        viewer.filter(stage="late")


def test_a_run_that_trained_nothing_has_no_stages(run):
    viewer = TrajectoryViewer(run[0])
    assert viewer.choices["train_step"] == [] and viewer.choices["phase"] == [] and viewer.choices["iteration"] == []
