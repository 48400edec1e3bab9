"""Trajectories holding text that is not valid Unicode are stored sanitised and flagged, never refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import StoreError
from workbench.safetext import REPLACEMENT, has_surrogates, safe_json, safe_text
from workbench.store import Store, safe_trajectory
from workbench.trajectory import HostCall, Step, Task, Trajectory

any_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=40).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def fast_store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("run"), synchronous="NORMAL") as store:
        yield store


def all_text(value) -> str:
    return json.dumps(value, ensure_ascii=False)


@st.composite
def trajectories(draw) -> Trajectory:
    """A trajectory with arbitrary text (lone surrogates included) in every text field."""
    t = draw
    task = Task(
        id=t(any_text),
        question=t(any_text),
        golden_answers=t(st.lists(any_text, max_size=3)),
        metadata=t(st.dictionaries(any_text, json_values, max_size=3)),
    )
    steps = [
        Step(
            index=i,
            raw=t(any_text),
            think=t(st.none() | any_text),
            code=t(st.none() | any_text),
            format_flags=t(st.lists(any_text, max_size=2)),
            observation={"stdout": t(any_text), "traceback": t(st.lists(any_text, max_size=2))},
            observation_text=t(any_text),
            notepad={"facts": t(st.lists(any_text, max_size=2))},
            host_calls=[
                HostCall(
                    name=t(any_text),
                    arguments=t(st.dictionaries(any_text, json_values, max_size=3)),
                    result=t(json_values),
                    error=t(st.none() | any_text),
                )
            ],
            completion_ids=[1, 2, 3],
        )
        for i in range(t(st.integers(0, 3)))
    ]
    return Trajectory(
        task=task,
        id=t(any_text.filter(bool)),
        run_id=t(any_text),
        role=t(any_text),
        steps=steps,
        final_answer=t(st.none() | any_text),
        termination=t(any_text),
        error=t(st.none() | any_text),
        rewards=t(st.dictionaries(any_text, st.floats(-1, 1), max_size=2)),
        reward_spec=t(st.none() | any_text),
        lineage=t(st.dictionaries(any_text, json_values, max_size=3)),
        metadata=t(st.dictionaries(any_text, json_values, max_size=3)),
    )


# -- the reported case: a forged final answer ------------------------------------------------------
def test_a_final_answer_with_a_lone_surrogate_is_stored_sanitised_and_flagged(store, make_traj):
    traj = make_traj(0)
    traj.final_answer = "\ud800 forged"
    store.write(traj)
    got = store.get(traj.id)
    assert got.final_answer == f"{REPLACEMENT} forged"
    assert got.metadata["sanitized"] is True
    assert store.query()["final_answer"].tolist() == [f"{REPLACEMENT} forged"]
    assert traj.final_answer == "\ud800 forged"  # the caller's object is left as it was


def test_a_valid_trajectory_is_stored_unchanged_and_unflagged(store, make_traj):
    traj = make_traj(1)
    traj.final_answer = "café \U0001f600 \ufffd"  # valid text, a literal U+FFFD included
    store.write(traj)
    got = store.get(traj.id)
    assert got.to_dict() == traj.to_dict()
    assert "sanitized" not in got.metadata
    assert safe_trajectory(traj) is traj


@pytest.mark.parametrize(
    "where",
    [
        "question",
        "task_id",
        "step_code",
        "observation",
        "tool_args",
        "tool_result",
        "metadata_key",
        "lineage_policy",
        "run_id",
        "error",
        "rewards_key",
    ],
)
def test_a_lone_surrogate_anywhere_is_stored(store, make_traj, where):
    traj = make_traj(2)
    bad = "x\udcff"
    if where == "question":
        traj.task.question = bad
    elif where == "task_id":
        traj.task.id = bad
    elif where == "step_code":
        traj.steps[0].code = bad
    elif where == "observation":
        traj.steps[0].observation = {"stdout": bad}
    elif where == "tool_args":
        traj.steps[0].host_calls[0].arguments = {"query": bad}
    elif where == "tool_result":
        traj.steps[0].host_calls[0].result = [bad]
    elif where == "metadata_key":
        traj.metadata = {bad: 1}
    elif where == "lineage_policy":
        traj.lineage = {"policy": {"name": bad}}
    elif where == "run_id":
        traj.run_id = bad
    elif where == "error":
        traj.error = bad
    elif where == "rewards_key":
        traj.rewards = {bad: 1.0, "total": 1.0}
    store.write(traj)
    [got] = list(store.iter_trajectories())
    assert not has_surrogates(all_text(got.to_dict()))
    assert f"x{REPLACEMENT}" in all_text(got.to_dict())
    assert got.metadata["sanitized"] is True


def test_a_value_json_cannot_hold_is_a_store_error_naming_the_fix(store, make_traj):
    traj = make_traj(3)
    traj.metadata["when"] = object()
    with pytest.raises(StoreError, match=r"JSON cannot represent.*keep metadata"):
        store.write(traj)
    assert len(store) == 0


def test_rewards_metrics_and_events_take_any_text(store, make_traj):
    traj = make_traj(4)
    store.write(traj)
    store.record_rewards(
        traj.id,
        {"f1\ud800": 0.5, "total": 0.5},
        spec_name="spec\udcff",
        spec_json={"k\ud800": "v"},
        provenance={"author": "a\ud800", "note": "\udcff"},
    )
    store.log_metrics("run\ud800", 0, {"loss\udcff": 1.0})
    store.log_event("run\ud800", "kind\udcff", {"p\ud800": "\udcff"}, trajectory_id=traj.id)
    hist = store.reward_history(traj.id)
    assert hist["spec_name"].iloc[-1] == f"spec{REPLACEMENT}"
    assert hist["author"].iloc[-1] == f"a{REPLACEMENT}"
    assert store.get(traj.id).rewards == {f"f1{REPLACEMENT}": 0.5, "total": 0.5}
    assert store.metrics()["name"].tolist() == [f"loss{REPLACEMENT}"]
    assert store.events()["payload"].tolist() == [{f"p{REPLACEMENT}": REPLACEMENT}]


# -- properties -----------------------------------------------------------------------------------
@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(traj=trajectories())
def test_any_trajectory_round_trips_as_its_safe_form(fast_store, traj):
    fast_store.write(traj)
    got = fast_store.get(safe_text(traj.id))
    expected = safe_json(traj.to_dict())
    flagged = has_surrogates(all_text(traj.to_dict()))
    got_dict = got.to_dict()
    assert not has_surrogates(all_text(got_dict))
    assert got_dict["metadata"].pop("sanitized", False) is flagged
    expected["metadata"].pop("sanitized", None)
    assert json.loads(json.dumps(got_dict)) == json.loads(json.dumps(expected))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=any_text)
def test_any_final_answer_round_trips_as_its_safe_form(fast_store, answer):
    traj = Trajectory(task=Task(id="t", question="q"), id="answer", final_answer=answer)
    fast_store.write(traj)
    assert fast_store.get(traj.id).final_answer == safe_text(answer)
    assert fast_store.query(task_id="t")["final_answer"].tolist() == [safe_text(answer)]
