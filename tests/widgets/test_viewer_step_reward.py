"""The viewer's step label shows a turn's reward when the trajectory was scored per turn."""

from workbench.rewards import RewardSpec
from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory
from workbench.widgets import TrajectoryViewer


def test_step_label_shows_the_turn_reward(tmp_path):
    think, code = "<think>look it up first</think>", "<code>print(search('x'))</code>"
    t = Trajectory(task=Task("q1", "Capital?", ["paris"], {"hops": 1}), final_answer="Paris",
                   steps=[Step(0, think + code, observation={"stdout": "doc"}),
                          Step(1, think + code, observation={})])
    plain = Trajectory(task=Task("q2", "Capital?", ["paris"], {"hops": 1}), steps=[Step(0, think + code)])
    RewardSpec.preset("l0").score(t)  # r_0 = 0.1·½ + 0.1·½ = 0.1
    with Store(tmp_path) as store:
        store.write_many([t, plain])
    viewer = TrajectoryViewer(tmp_path)
    viewer.select(t.id)
    assert "reward 0.1" in viewer.step_label.value
    viewer.select(plain.id)
    assert "reward" not in viewer.step_label.value
