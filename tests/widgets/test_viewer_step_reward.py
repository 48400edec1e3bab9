"""The viewer shows a turn's reward when the trajectory was scored per turn."""

from workbench.rewards import RewardSpec
from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory
from workbench.widgets import TrajectoryViewer


def test_turns_carry_their_reward(tmp_path):
    think, code = "<think>look it up first</think>", "<code>print(search('x'))</code>"
    t = Trajectory(
        task=Task("q1", "Capital?", ["paris"], {"hops": 1}),
        final_answer="Paris",
        steps=[Step(0, think + code, observation={"stdout": "doc"}), Step(1, think + code, observation={})],
    )
    plain = Trajectory(task=Task("q2", "Capital?", ["paris"], {"hops": 1}), steps=[Step(0, think + code)])
    RewardSpec.preset("l0").score(t)  # r_0 = 0.1·½ + 0.1·½ = 0.1
    with Store(tmp_path) as store:
        store.write_many([t, plain])
    viewer = TrajectoryViewer(tmp_path)
    viewer.select(t.id)
    assert viewer.detail["steps"][0]["reward"] == 0.1
    viewer.select(plain.id)
    assert viewer.detail["steps"][0]["reward"] is None


def test_turns_carry_the_policy_version_that_sampled_them(tmp_path):
    """Asynchronous RL stamps each turn with its policy version (an episode may span two); the detail carries
    it for the turn's badge, and a synchronous run's turns carry none."""
    async_traj = Trajectory(
        task=Task("q1", "Capital?", ["paris"], {"hops": 1}),
        steps=[Step(0, "<code>1</code>", policy_version=3), Step(1, "<code>2</code>", policy_version=4)],
    )
    sync_traj = Trajectory(task=Task("q2", "Capital?", ["paris"], {"hops": 1}), steps=[Step(0, "<code>1</code>")])
    with Store(tmp_path) as store:
        store.write_many([async_traj, sync_traj])
    viewer = TrajectoryViewer(tmp_path)
    viewer.select(async_traj.id)
    assert [s["version"] for s in viewer.detail["steps"]] == [3, 4]
    viewer.select(sync_traj.id)
    assert viewer.detail["steps"][0]["version"] is None
