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
