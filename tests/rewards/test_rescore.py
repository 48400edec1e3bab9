import json

import pytest

from workbench.errors import ConfigError
from workbench.rewards import RewardSpec, rescore
from workbench.trajectory import Step, Task, Trajectory


def _trajs():
    out = []
    for answer in ["Paris, France", "Paris", "Rome"]:
        out.append(
            Trajectory(task=Task("q1", "Where?", ["Paris"]), run_id="r1", steps=[Step(0, f"<answer>{answer}</answer>")])
        )
    return out


def test_rescore_a_list_keeps_history():
    trajs = _trajs()
    first = rescore(trajs, "search_r1")
    assert [first[t.id]["total"] for t in trajs] == [0.0, 1.0, 0.0]
    second = rescore(trajs, RewardSpec.preset("zerosearch"), provenance={"reason": "F1"})
    assert second[trajs[0].id]["total"] == pytest.approx(2 / 3)
    t = trajs[0]
    assert t.reward_spec == "zerosearch" and t.rewards["cover_em"] == 1.0
    history = t.metadata["reward_history"]
    assert [h["spec"] for h in history] == ["search_r1", "zerosearch"]
    assert history[1]["provenance"] == {"reason": "F1"}
    assert json.loads(history[1]["spec_json"])["name"] == "zerosearch"


def test_rescore_keeps_rewards_given_before():
    [t] = _trajs()[:1]
    t.rewards, t.reward_spec = {"total": 0.3}, "rollout"
    rescore([t], "search_r1")
    assert [h["spec"] for h in t.metadata["reward_history"]] == ["rollout", "search_r1"]


def test_group_components_see_the_whole_task_group():
    spec = RewardSpec(name="d", components=[{"name": "drzero.difficulty"}])
    scores = rescore(_trajs(), spec)
    assert {s["total"] for s in scores.values()} == {1.0}  # k = 1 of n = 3: (3 - 1)/(3 - 1)
    alone = _trajs()[1]
    assert spec.score(alone)["total"] == 0.0  # scored alone, k = n = 1


def test_filters_need_a_store():
    with pytest.raises(ConfigError, match="store"):
        rescore(_trajs(), "search_r1", run="r1")


def test_rescore_a_real_store(tmp_path):
    store_mod = pytest.importorskip("workbench.store")
    store = store_mod.Store(tmp_path)
    trajs = _trajs()
    trajs[0].rewards, trajs[0].reward_spec = {"total": 0.0}, "search_r1"
    store.write_many(trajs)
    out = rescore(store, "zerosearch", provenance={"author": "me", "reason": "F1"}, run="r1")
    assert set(out) == {t.id for t in trajs}
    again = store.get(trajs[0].id)
    assert again.reward_spec == "zerosearch" and again.rewards["f1"] == pytest.approx(2 / 3)
    hist = store.reward_history(trajs[0].id)
    assert list(hist["spec_name"]) == ["search_r1", "zerosearch"]
    assert hist["author"].iloc[-1] == "me"
    store.close()
