"""`viewer.groups(step=...)` and the group tab: a training step's groups with rewards, spread, the
advantages as the trainer recorded them (real estimators, real step records) and dropped groups."""

from __future__ import annotations

import pytest

from workbench.store import Store
from workbench.train.estimators import Batch, make_estimator
from workbench.train.step_records import advantages_payload, dropped_payload
from workbench.widgets import TrajectoryViewer


def rollouts(make_traj, step: int, rewards: dict[int, list[float]]):
    """Groups of rollouts of tasks `task-<k>` at training step `step`, as the trainer writes them."""
    out = []
    for k, values in rewards.items():
        for j, r in enumerate(values):
            t = make_traj(k, reward=r, steps=2, traj_id=f"s{step}-t{k}-r{j}".ljust(32, "0"))
            t.lineage["train_step"] = step
            out.append(t)
    return out


@pytest.fixture
def trained(tmp_path, make_traj):
    run = tmp_path / "train"
    with Store(run) as store:
        store.log_event("train", "iteration_start", {"iteration": 0})
        batch = rollouts(make_traj, 0, {1: [1.0, 0.0], 2: [0.5, 0.0]})
        flat = rollouts(make_traj, 0, {3: [0.0, 0.0]})
        store.write_many(batch)
        for name, per_turn in (("grpo", False), ("reinforce_pp", True)):
            estimator = make_estimator(name)
            adv = estimator.advantages(Batch(batch, 2))
            payload = advantages_payload(0, estimator.name, Batch(batch, 2), adv)
            assert payload["per_turn"] is per_turn
            if name == "grpo":
                store.log_event("train", "dropped_groups", dropped_payload(0, batch + flat, batch))
                store.log_event("train", "advantages", payload)
        per_turn_run = payload
    return run, per_turn_run


def test_groups_of_a_step_hold_rewards_spread_advantages_and_drops(trained):
    run, _ = trained
    viewer = TrajectoryViewer(run)
    groups = viewer.groups(step=0)
    assert groups.task_id.tolist() == ["task-1", "task-2", "task-3"] and groups.dropped.tolist() == [False, False, True]
    first, dropped = groups.iloc[0].to_dict(), groups.iloc[2].to_dict()
    assert first["rewards"] == [1.0, 0.0] and first["mean"] == 0.5 and first["spread"] == 0.5
    assert first["iteration"] == 0 and first["kept"] is None
    assert first["advantages"][0] > 0 > first["advantages"][1]  # grpo: above the group mean is positive
    assert dropped["advantages"] is None and dropped["rewards"] == [0.0, 0.0]
    assert "dynamic sampling" in dropped["note"]
    assert viewer.groups(step=1).empty and viewer.groups(step=0, iteration=5).empty


def test_the_group_tab_shows_the_selected_trajectorys_group(trained):
    run, _ = trained
    viewer = TrajectoryViewer(run)
    viewer.select("s0-t2-r1")
    group = viewer.detail["group"]
    assert group["me"].startswith("s0-t2-r1") and group["rewards"] == [0.5, 0.0] and group["dropped_groups"] == 1
    assert len(group["advantages"]) == 2


def test_per_turn_advantages_are_cut_to_each_trajectorys_turns(trained):
    _, payload = trained
    assert all(len(values) == 2 for values in payload["advantages"])  # two turns each


def test_a_run_without_step_records_still_gets_its_groups(tmp_path, make_traj):
    with Store(tmp_path) as store:
        store.write_many(rollouts(make_traj, 3, {7: [1.0, 1.0, 0.0]}))
    viewer = TrajectoryViewer(tmp_path)
    [group] = viewer.groups(step=3).to_dict("records")
    assert group["rollouts"] == 3 and group["advantages"] is None and "not recorded" in group["note"]
    assert viewer.detail["group"]["rewards"] == [1.0, 1.0, 0.0]


def test_one_prompts_rollouts_across_training_steps(tmp_path, make_traj):
    with Store(tmp_path) as store:
        store.write_many(rollouts(make_traj, 0, {7: [0.0, 0.0]}) + rollouts(make_traj, 4, {7: [1.0, 0.0]}))
    viewer = TrajectoryViewer(tmp_path)
    across = viewer.across_steps("task-7")
    assert across.step.tolist() == [0, 4] and across["mean"].tolist() == [0.0, 0.5]
    assert across.rollouts.tolist() == [2, 2] and across.answers[1] == ["Founder 7", "Founder 7"]
    viewer.select("s4-t7-r0")
    assert [r["step"] for r in viewer.detail["group"]["across_steps"]] == [0, 4]
