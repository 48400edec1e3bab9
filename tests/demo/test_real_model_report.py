"""The SmolLM2 demo's statistics: Wilson intervals, paired bootstrap changes, per-hop tables, turn habits."""

from __future__ import annotations

import pytest

from workbench.demo.intervals import paired_change, wilson
from workbench.demo.real_report import StageEval, change_rows, stage_rows, stages_table
from workbench.demo.turn_format import FOLLOWED, turn_format, turn_habit
from workbench.trajectory import Step, Task, Trajectory


def test_wilson_matches_the_closed_form_and_stays_inside_0_1():
    low, high = wilson(12, 60)
    assert low == pytest.approx(0.1183, abs=1e-4) and high == pytest.approx(0.3178, abs=1e-4)
    assert wilson(0, 60)[0] == 0.0 and 0.05 < wilson(0, 60)[1] < 0.07
    assert wilson(60, 60)[1] == pytest.approx(1.0) and wilson(0, 0) == (0.0, 1.0)


def test_paired_change_is_seeded_and_brackets_the_mean():
    before, after = [0.0] * 60, [1.0] * 30 + [0.0] * 30
    change, low, high = paired_change(before, after, seed=3)
    assert change == 0.5 and 0.3 < low < 0.5 < high < 0.7
    assert paired_change(before, after, seed=3) == (change, low, high)
    assert paired_change([1.0] * 10, [1.0] * 10) == (0.0, 0.0, 0.0)  # no change anywhere: a point at 0
    with pytest.raises(ValueError, match="differ in length"):
        paired_change([1.0], [1.0, 0.0])


def _stage(name: str, correct: list[float]) -> StageEval:
    ids = [f"q{i}" for i in range(len(correct))]
    return StageEval(name, [], dict(zip(ids, correct, strict=True)), {q: 1 + i % 2 for i, q in enumerate(ids)})


def test_stage_rows_per_hop_and_changes_between_stages():
    sft = _stage("eval_sft", [1.0, 0.0] * 20)  # every 1-hop question right, every 2-hop wrong
    rl = _stage("eval_final", [1.0] * 40)
    rows = {r["hops"]: r for r in stage_rows(sft)}
    assert (rows["1"]["correct"], rows["2"]["correct"], rows["all"]["questions"]) == (20, 0, 40)
    changes = {r["hops"]: r for r in change_rows([sft, rl])}
    assert changes["2"]["change"] == 1.0 and changes["2"]["excludes_zero"]
    assert changes["1"]["change"] == 0.0 and not changes["1"]["excludes_zero"]
    assert "100.0% [" in stages_table([sft, rl])
    with pytest.raises(ValueError, match="different questions"):
        change_rows([sft, _stage("other", [1.0] * 3)])


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
