"""RewardTuner: live in-memory re-scoring, rank changes, save for training, apply with provenance."""

from __future__ import annotations

import pytest

from workbench.errors import ConfigError
from workbench.rewards import RewardSpec
from workbench.store import Store
from workbench.widgets import RewardTuner

ANSWERS = {0: "Founder 0", 1: "the Founder 1 himself", 2: "Founder", 3: "nobody", 4: "Founder 4"}


@pytest.fixture
def qa_run(tmp_path, make_traj):
    """Five solver answers, exact / covering / partial / wrong, stored with EM rewards."""
    run_dir = tmp_path / "qa"
    with Store(run_dir) as store:
        for i, answer in ANSWERS.items():
            t = make_traj(i, hops=1 + i % 2)
            t.final_answer = answer
            t.rewards = {"em": float(answer == f"Founder {i}")}
            t.rewards["total"] = t.rewards["em"]
            t.reward_spec = "search_r1"
            store.write(t)
        store.write(make_traj(9, role="proposer"))
    return run_dir


def test_starts_from_the_runs_preset_and_scores_in_memory(qa_run):
    tuner = RewardTuner(qa_run, role="solver")
    assert tuner.spec.name == "search_r1" and len(tuner.trajectories) == 5
    assert tuner.scores["rescored"].tolist() == tuner.scores["stored"].tolist() == [1, 0, 0, 0, 1]
    assert [t.name for t in tuner.panes["histogram"].figure.data] == ["stored", "re-scored"]
    assert tuner.preset_menu.value == "search_r1"  # the dropdown names the preset in use
    assert "0 changed, 0 of them across the pass threshold (0.5)" in tuner.status.value


def test_weights_and_variants_rescore_live_without_writing(qa_run):
    tuner = RewardTuner(qa_run, spec="zerosearch", role="solver")  # f1 + cover_em (weight 0)
    f1_only = tuner.scores["rescored"].round(3).tolist()
    assert f1_only == [1.0, 0.8, pytest.approx(0.667, abs=1e-3), 0.0, 1.0]
    assert tuner.preset_menu.value == "zerosearch"
    assert "2 changed, 2 of them across the pass threshold" in tuner.status.value  # 0 -> 0.8, 0 -> 0.667

    tuner.set_weight("cover_em", 1.0)  # as dragging the slider does
    assert tuner.spec.components[1].weight == 1.0
    assert tuner.scores["rescored"].round(3).tolist()[:2] == [2.0, 1.8]  # "the Founder 1 himself"
    assert tuner.scores["cover_em"].tolist() == [1.0, 1.0, 0.0, 0.0, 1.0]
    changes = tuner.panes["rank_changes"].figure.data[0]
    assert len(changes.y) > 0  # some trajectories changed rank

    tuner.set_param("f1", "normalizer", "unicode")
    assert tuner.spec.components[0].params == {"normalizer": "unicode"}
    tuner.set_param("f1", "normalizer", "bogus")  # an invalid variant: shown, not raised
    assert "normalizer" in tuner.error and "bogus" in tuner.status.value
    tuner.set_param("f1", "normalizer", "squad")
    assert tuner.error is None

    with Store.open_readonly(qa_run) as store:  # nothing reached the store
        assert store.query(role="solver")["reward_spec"].unique().tolist() == ["search_r1"]


def test_presets_and_components_can_be_swapped(qa_run):
    tuner = RewardTuner(qa_run, role="solver")
    tuner.preset_menu.value = "l0"
    assert tuner.spec.name == "l0" and len(tuner.rows_box.children) == 3
    tuner.add_menu.value = "has_answer"
    assert [c.name for c in tuner.spec.components][-1] == "has_answer"
    assert tuner.scores["has_answer"].tolist() == [1.0] * 5
    tuner.rows_box.children[-1].children[0].children[-1].click()  # its ✕ button (the row, then its note line)
    assert "has_answer" not in [c.name for c in tuner.spec.components]
    with pytest.raises(ConfigError, match="no component"):
        tuner.set_weight("nope", 1.0)


def test_save_round_trips_for_training(qa_run, tmp_path):
    tuner = RewardTuner(qa_run, spec="agent0_paper", role="solver")
    tuner.set_weight("agent0.tool", 0.25)
    tuner.set_param("agent0.uncertainty", "variant", "code")
    for suffix in (".toml", ".json"):
        path = tuner.save(tmp_path / f"spec{suffix}")
        loaded = RewardSpec.load(path)
        assert loaded == tuner.spec and loaded.floor == 0.0 and loaded.gate == ["agent0.format"]
    with pytest.raises(ConfigError, match=r"\.toml or \.json"):
        tuner.save(tmp_path / "spec.txt")


def test_apply_records_scores_with_provenance(qa_run):
    tuner = RewardTuner(qa_run, spec="zerosearch", role="solver")
    tuner.set_weight("cover_em", 0.5)
    out = tuner.apply(reason="credit covering answers", author="tester")
    assert len(out) == 5
    with Store.open_readonly(qa_run) as store:
        solvers = store.query(role="solver")
        assert set(solvers["reward_spec"]) == {"zerosearch"}
        history = store.reward_history(solvers["id"][1])
        assert history["spec_name"].tolist() == ["search_r1", "zerosearch"]
        assert history["author"].iloc[-1] == "tester"
        assert history["provenance"].iloc[-1]["via"] == "RewardTuner"
        assert store.query(role="proposer")["reward_spec"].tolist() == ["em"]  # filter respected
    assert tuner.scores["stored"].round(3).tolist() == tuner.scores["rescored"].round(3).tolist()


def test_a_run_without_stored_rewards_sends_no_nan(tmp_path, make_traj, states):
    """An evaluation run that stored no rewards, tuned with the l0 preset: every state the
    front end gets is strict JSON, and the rank-change plot says why it is empty."""
    import json

    with Store(tmp_path / "eval") as store:
        for i in range(4):
            store.write(make_traj(i, reward=None, hops=None if i % 2 else 2))
    tuner = RewardTuner(tmp_path / "eval", spec="l0")
    assert tuner.scores["stored"].isna().all() and tuner.scores["rescored"].notna().all()
    for state in [tuner.plots.get_state(), *states(tuner.plots)]:
        json.dumps(state, allow_nan=False)
    ranks = tuner.panes["rank_changes"].figure
    assert "no stored rewards" in ranks.layout.annotations[0].text
    assert "4 had no stored reward" in tuner.status.value
    tuner.apply(reason="score the eval run", author="tester")
    assert tuner.scores["stored"].notna().all()
    assert len(tuner.panes["histogram"].figure.data[0].x) == 4


def test_l0_variants_are_explained_as_the_reward_code_scores_them(qa_run):
    from workbench.rewards.l0 import l0_qa, step_code_score
    from workbench.trajectory import Step

    tuner = RewardTuner(qa_run, spec="l0", role="solver")
    notes = {key: row["note"].value for key, row in tuner._rows.items()}
    assert "has_answer=fixed" in notes["l0.qa"] and "no_output=success" in notes["l0.code"]
    assert notes["l0.format"] == ""  # nothing to explain
    assert tuner._rows["l0.qa"]["params"]["has_answer"].tooltip.startswith("has_answer=fixed")
    # what the notes say, the reward code does
    assert l0_qa("  ", ["Founder"], has_answer="fixed") == 0.0 and l0_qa("  ", ["Founder"], has_answer="l0") == 0.1
    assert l0_qa(None, ["Founder"], has_answer="l0") == 0.0  # no submission gets 0 either way
    silent = Step(0, "", observation={"stdout": "", "stderr": "", "display": [], "result": None})
    assert step_code_score(silent, "success") == 1.0 and step_code_score(silent, "zero") == 0.0
    assert step_code_score(Step(0, ""), "success") == step_code_score(Step(0, ""), "zero") == 0.0  # nothing ran

    tuner.set_param("l0.qa", "has_answer", "l0")
    assert "the empty string included" in tuner._rows["l0.qa"]["note"].value
    tuner.set_param("l0.code", "no_output", "zero")
    assert "no_output=zero" in tuner._rows["l0.code"]["params"]["no_output"].tooltip
