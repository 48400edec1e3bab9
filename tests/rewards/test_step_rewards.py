"""Per-turn rewards: `RewardSpec.score_steps`, `Step.reward`, the store and `rescore`."""

import json
import math
import sqlite3
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.rewards import RewardSpec, l0_step_rewards, rescore, reward
from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory

THINK, SHORT = "<think>look it up first</think>", "<think>short</think>"
CODE = "<code>print(search('x'))</code>"


def three_turns(final="Paris") -> Trajectory:
    steps = [
        Step(0, THINK + CODE, observation={"stdout": "doc"}),
        Step(1, SHORT + CODE, observation={"stdout": "x", "error_name": "NameError"}),
        Step(2, THINK + "<code>submit_final_answer('Paris')</code>", observation={}),
    ]
    return Trajectory(task=Task("q1", "Capital of France?", ["paris"]), steps=steps, final_answer=final, run_id="r1")


def test_l0_preset_pays_each_turn_its_own_terms():
    """L0: r_t = 0.8·qa_t + 0.1·format_t + 0.1·code_t, with T = 3.

    format: turn 0 well formed (1/3), turn 1 think ≤ 10 chars (0), turn 2 well formed (1/3).
    code: turn 0 one output, no error → 1/3; turn 1 stdout + error = 2 outputs, 1 error →
    (1 − 1/2)/3 = 1/6; turn 2 ran with no output ("success") → 1/3.
    qa (last turn): "Paris" = "paris" → 0.9·1 + 0.1·1 = 1.
    r_0 = 0.1/3 + 0.1/3 = 0.0666…;  r_1 = 0 + 0.1/6 = 0.01666…;  r_2 = 0.1/3 + 0.1/3 + 0.8 = 0.8666…
    total = 0.8 + 0.1·(2/3) + 0.1·(0.5) = 0.95 = r_0 + r_1 + r_2.
    """
    t = three_turns()
    spec = RewardSpec.preset("l0")
    steps = spec.score_steps(t)
    assert steps == pytest.approx([0.2 / 3, 0.1 / 6, 0.2 / 3 + 0.8])
    assert [s.reward for s in t.steps] == pytest.approx(steps)
    assert spec.score(t)["total"] == pytest.approx(0.95) == pytest.approx(sum(steps))
    assert l0_step_rewards(t) == pytest.approx(steps)


def test_specs_without_per_step_components_pay_the_total_last_and_leave_steps_unset():
    """EM only: [0, 0, total] with total = EM("Paris", ["paris"]) = 1; Step.reward stays None."""
    t = three_turns()
    spec = RewardSpec.preset("search_r1")
    assert not spec.per_step
    assert spec.score_steps(t) == [0.0, 0.0, 1.0]
    assert all(s.reward is None for s in t.steps)


def test_a_failed_gate_or_a_binding_floor_pays_the_total_on_the_last_turn():
    """Gate: em("London", ["paris"]) = 0 fails, so total = gate_fail = −1 → [0, 0, −1].
    Floor: −1·format = −(1/3 + 0 + 1/3) = −2/3 < floor 0, so total = 0 → [0, 0, 0].
    Without the floor: per-step −1/3, 0, −1/3 (sum −2/3)."""
    gated = RewardSpec(name="g", components=[{"name": "l0.format"}], gate=["em"], gate_fail=-1.0)
    assert gated.score_steps(three_turns(final="London")) == [0.0, 0.0, -1.0]
    floored = RewardSpec(name="f", components=[{"name": "l0.format", "weight": -1.0}], floor=0.0)
    t = three_turns()
    assert floored.score_steps(t) == [0.0, 0.0, 0.0] and [s.reward for s in t.steps] == [0, 0, 0]
    bare = RewardSpec(name="b", components=[{"name": "l0.format", "weight": -1.0}])
    assert bare.score_steps(t) == pytest.approx([-1 / 3, 0.0, -1 / 3])


def test_a_user_per_step_component_and_its_length_check():
    @reward("test.step_index", per_step=True)
    def step_index(traj, ctx):
        return [float(s.index) for s in traj.steps]

    @reward("test.too_short", per_step=True)
    def too_short(traj, ctx):
        return [1.0]

    t = three_turns()
    spec = RewardSpec(name="u", components=[{"name": "test.step_index", "weight": 0.5}, {"name": "em", "weight": 2.0}])
    # 0.5·[0, 1, 2] + [0, 0, 2·1] = [0, 0.5, 3]; total 0.5·3 + 2 = 3.5
    assert spec.score_steps(t) == [0.0, 0.5, 3.0] and spec.score(t)["total"] == 3.5
    with pytest.raises(ConfigError, match="one per step"):
        RewardSpec(name="s", components=[{"name": "test.too_short"}]).score(t)
    assert RewardSpec.preset("l0").score_steps(Trajectory(task=Task("e", "?"))) == []


def test_store_round_trips_step_rewards_and_reads_records_without_them(tmp_path):
    store = Store(tmp_path)
    t = three_turns()
    RewardSpec.preset("l0").score(t)
    store.write(t)
    assert [s.reward for s in store.get(t.id).steps] == [s.reward for s in t.steps]

    old = three_turns()  # a record written before steps had rewards: no "reward" key at all
    data = old.to_dict()
    for s in data["steps"]:
        del s["reward"]
    store.write(old)
    with sqlite3.connect(store.path) as conn:
        conn.execute(
            "UPDATE trajectories SET codec = 'zlib-json', data = ? WHERE id = ?",
            (zlib.compress(json.dumps(data).encode()), old.id),
        )
    assert [s.reward for s in store.get(old.id).steps] == [None, None, None]


def test_rescore_recomputes_step_rewards_in_a_store(tmp_path):
    store = Store(tmp_path)
    t = three_turns()
    store.write(t)
    rescore(store, "l0", run="r1")
    again = store.get(t.id)
    assert again.reward_spec == "l0"
    assert [s.reward for s in again.steps] == pytest.approx([0.2 / 3, 0.1 / 6, 0.2 / 3 + 0.8])
    assert len(store.reward_history(t.id)) == 1  # one assignment, not one per write


raws = st.lists(
    st.sampled_from([THINK + CODE, SHORT + CODE, "no tags", THINK, CODE, ""]) | st.text(max_size=40),
    min_size=0,
    max_size=6,
)
observations = st.sampled_from(
    [None, {}, {"stdout": "x"}, {"error_name": "E", "stderr": "e"}, {"outputs": [{"output_type": "error"}]}]
)


@settings(max_examples=80, deadline=None)
@given(raws, st.lists(observations, min_size=6, max_size=6), st.one_of(st.none(), st.text()))
def test_step_rewards_always_sum_to_the_total(texts, obs, final):
    t = Trajectory(
        task=Task("q", "?", ["paris"]),
        final_answer=final,
        steps=[Step(i, r, observation=obs[i]) for i, r in enumerate(texts)],
    )
    for name in ("l0", "l0_upstream", "search_r1"):
        spec = RewardSpec.preset(name)
        steps = spec.score_steps(t)
        assert len(steps) == len(t.steps)
        if steps:
            assert math.isclose(math.fsum(steps), spec.score(t)["total"], abs_tol=1e-12)
    assert RewardSpec.preset("l0").score_steps(t) == pytest.approx(l0_step_rewards(t))
