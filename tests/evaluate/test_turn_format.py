"""Format counts over a model's turns (`workbench.evaluate.turn_format`): what each turn did instead of the format."""

from __future__ import annotations

from workbench.evaluate.turn_format import FOLLOWED, turn_format, turn_habit
from workbench.trajectory import Step, Task, Trajectory


def test_turn_habits_name_what_the_model_wrote_instead():
    good = Step(0, "<think>a</think><code>x=1</code>", think="a", code="x=1", observation={"stdout": ""})
    prose = Step(1, "The answer is Paris.")
    fenced = Step(2, "Sure!\n```python\nprint(1)\n```")
    failed = Step(
        3, "<think>b</think><code>1/0</code>", think="b", code="1/0", observation={"error_name": "ZeroDivisionError"}
    )
    assert [turn_habit(s) for s in (good, prose, fenced, failed)] == [
        FOLLOWED,
        "prose with no code",
        "a Markdown code fence instead of <code>",
        "code raised ZeroDivisionError",
    ]
    shares = turn_format([Trajectory(Task("t", "q?", ["a"]), steps=[good, prose, fenced, failed])])
    assert (shares.turns, shares.with_code, shares.code_ran, shares.followed) == (4, 2, 1, 1)
    assert shares.example == "The answer is Paris."
