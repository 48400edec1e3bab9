"""A proposer's attempts are labelled: phase, iteration, step and spec, and which ones its
difficulty was computed from."""

from __future__ import annotations

import time

from workbench.store import Store
from workbench.widgets import TrajectoryViewer


def test_attempts_name_their_phase_iteration_step_and_spec(tmp_path, make_traj):
    with Store(tmp_path) as store:
        store.log_event("evolve", "iteration_start", {"iteration": 1})
        prop = make_traj(1, role="proposer", traj_id="p" * 32)
        prop.metadata = {"iteration": 1, "question": "Who?", "solver_correct": [False, True]}
        store.write(prop)
        for k in range(2):  # the difficulty probes, scored by EM against the proposer's answer
            probe = make_traj(10 + k, origin=prop.id, traj_id=f"probe{k}".ljust(32, "0"))
            probe.lineage["iteration"], probe.reward_spec = 1, "em"
            store.write(probe)
        rollout = make_traj(20, origin=prop.id, traj_id="train".ljust(32, "0"))  # trained on later
        rollout.lineage.update(phase="solver_update", train_step=3)
        rollout.reward_spec = "l0.qa"
        rollout.started_at = time.time() + 100  # after the iteration started
        store.write(rollout)
    viewer = TrajectoryViewer(tmp_path)
    viewer.select(prop.id)
    labels = [(c["phase"], c["iteration"], c["step"], c["spec"], c["difficulty"]) for c in viewer.detail["children"]]
    assert labels == [
        ("propose", 1, None, "em", True),
        ("propose", 1, None, "em", True),
        ("solver_update", 1, 3, "l0.qa", False),  # its iteration: the one running when it started
    ]
    note = viewer.detail["difficulty_from"]
    assert note == "difficulty from 2 probes (1 correct by exact match against the proposer's answer)"
