"""Unit tests: prompts, proposal read-back, format score inputs, votes, bands, Agent0 reward, configs."""

from __future__ import annotations

import random

import pytest

from workbench.errors import ConfigError
from workbench.evolve import (Agent0Config, DrZeroConfig, Proposal, agent0_reward, drzero_reward, format_components,
                              in_band, majority_vote, proposal_of, proposer_task, sample_documents, sample_hops,
                              uncertainty)
from workbench.evolve.modes import agent0_mode
from workbench.evolve.phases import Proposed
from workbench.evolve.scripted import next_turn, question_text
from workbench.trajectory import Step, Task, ToolCall, Trajectory


def proposer_traj(hops: int, raws: list[str], searches: list[str], question: str, answer: str,
                  document: str = "(Title: Vel) Vel was directed by Ana Ro.") -> Trajectory:
    task = Task("p", "prompt", metadata={"hops": hops, "document": document})
    steps = [Step(index=i, raw=r) for i, r in enumerate(raws)]
    steps[0].tool_calls = [ToolCall("search", {"query": "q"}, result=s) for s in searches]
    steps[-1].tool_calls.append(ToolCall("submit_question", {"question": question, "answer": answer}, result="ok"))
    return Trajectory(task=task, role="proposer", steps=steps)


def test_proposal_is_read_from_the_last_successful_submit_call():
    traj = proposer_traj(1, ["<think>a</think><code>x</code>"], [], "Who directed Vel?", "Ana Ro")
    traj.steps[-1].tool_calls.append(ToolCall("submit_question", {"question": "bad", "answer": "x"}, error="boom"))
    assert proposal_of(traj) == Proposal("Who directed Vel?", "Ana Ro")
    assert proposal_of(Trajectory(task=Task("t", "q"))) is None


def test_format_components_follow_drzero():
    good = proposer_traj(2, ["<think>a</think><code>1</code>", "<think>b</think><code>2</code>"],
                         ["Doc 1 (Title: Ana Ro) Ana Ro was born in the city of Lund."],
                         "What is the birthplace of the director of Vel?", "Lund")
    fmt = format_components(good)
    assert fmt == {"think": 1.0, "tool": 1.0, "ans": 1.0, "integrity": 1.0, "format": 1.0}
    # no search for a 2-hop question; half the turns without think; answer not in doc or results
    bad = proposer_traj(2, ["<think>a</think><code>1</code>", "<code>2</code>"], [],
                        "What is the birthplace of the director of Vel?", "Paris")
    fmt = format_components(bad)
    assert (fmt["think"], fmt["tool"], fmt["ans"]) == (0.5, 0.0, 0.0) and fmt["format"] == pytest.approx(1.5 / 4)
    leak = proposer_traj(1, ["<think>a</think>"], [], "Who is Ana Ro, director of Vel?", "Ana Ro")
    assert format_components(leak)["format"] == 0.0


@pytest.mark.parametrize("k,n,difficulty", [(0, 5, 0.0), (1, 5, 1.0), (3, 5, 0.5), (5, 5, 0.0)])
def test_drzero_reward_is_half_format_plus_difficulty(k, n, difficulty):
    fmt = {"think": 1.0, "tool": 1.0, "ans": 1.0, "integrity": 1.0, "format": 1.0}
    r = drzero_reward(fmt, k, n)
    assert r["difficulty"] == difficulty and r["total"] == pytest.approx(0.5 + difficulty)
    assert drzero_reward({**fmt, "format": 0.0}, 1, 5)["total"] == 0.0  # no difficulty without format


def test_majority_vote_normalises_and_reports_both_denominators():
    vote = majority_vote(["The Lund", "lund", None, "Oslo", "", "LUND."])
    assert vote.answer == "The Lund" and vote.count == 3
    assert vote.p == pytest.approx(3 / 6) and vote.p_valid == pytest.approx(3 / 4)
    assert majority_vote([None, ""]).answer is None


def test_band_and_uncertainty_forms():
    assert in_band(0.3, 0.3, 0.8) and in_band(0.8, 0.3, 0.8)
    assert not in_band(0.2, 0.3, 0.8) and not in_band(0.9, 0.3, 0.8)
    assert uncertainty(0.5) == 1.0 and uncertainty(0.5, form="code") == 0.5
    assert uncertainty(0.9) == pytest.approx(0.2) and uncertainty(0.9, form="code") == pytest.approx(0.1)
    with pytest.raises(ConfigError):
        uncertainty(0.5, form="nope")


def _attempts(answers):
    return [Trajectory(task=Task(f"a{i}", "q"), final_answer=a) for i, a in enumerate(answers)]


def test_agent0_reward_terms_and_gate():
    traj = proposer_traj(2, ["<think>a</think>"], ["r1", "r2"], "What is the birthplace of X?", "Lund")
    vote = majority_vote(["Lund", "Lund", "Oslo", "Oslo", "Lund"])
    r = agent0_reward(traj, vote, proposal_of(traj), repetition=0.25)
    assert r["uncertainty"] == pytest.approx(1 - 2 * abs(0.6 - 0.5))
    assert r["tool_use"] == pytest.approx(0.1) and r["total"] == pytest.approx(r["uncertainty"] + 0.1 - 0.25)
    assert agent0_reward(traj, vote, None, repetition=0.0)["total"] == -1.0
    # code form: the uncertainty is zero when the majority disagrees with the proposer
    wrong = agent0_reward(traj, majority_vote(["Oslo", "Oslo", "Lund"]), proposal_of(traj), 0.0, form="code")
    assert wrong["uncertainty"] == 0.0


def test_agent0_qa_set_keeps_the_band_and_labels_by_majority():
    mode = agent0_mode(Agent0Config(p_low=0.3, p_high=0.8))
    items = []
    for i, answers in enumerate([["Lund"] * 5, ["Lund", "Lund", "Oslo", "Oslo", "Lund"], ["A", "B", "C", "D", "E"],
                                 ["Oslo", "Oslo", "Oslo", "Lund", None]]):
        traj = proposer_traj(2, ["<think>a</think>"], ["r"], f"What is the birthplace of person {i}?", "Lund")
        items.append(Proposed(traj, proposal_of(traj), attempts=_attempts(answers), valid=True))
    mode.score(items)
    qa = mode.qa_set(items)
    # p (over valid answers): 1.0 (too easy), 0.6 (kept), 0.2 (too hard), 0.75 (kept, label from majority)
    assert [t.metadata["self_consistency"] for t in qa] == [pytest.approx(0.6), pytest.approx(0.75)]
    assert [t.golden_answers for t in qa] == [["Lund"], ["Oslo"]]
    assert qa[1].metadata["proposer_answer"] == "Lund" and not qa[1].metadata["label_agrees_with_proposer"]
    assert all(t.metadata["origin"] == it.traj.id for t, it in zip(qa, [items[1], items[3]]))
    assert all(it.rewards["repetition"] > 0 for it in items)  # near-identical questions share a cluster


def test_scripted_proposer_first_turn_reads_the_document():
    doc = {"id": "3", "title": "Vel Orun", "text": "Vel Orun is a war film released in 1990. Vel Orun was directed by Ana Ro."}
    task = proposer_task(doc, 1, iteration=0)
    turn = next_turn("Task: " + task.question)
    assert "submit_question(" in turn and "search(" not in turn  # one hop: no search
    task = proposer_task(doc, 2, iteration=0)
    turn = next_turn("Task: " + task.question)
    assert "hop 1: the director of Vel Orun is Ana Ro" in turn and "search('Ana Ro', top_k=5)" in turn
    assert question_text("Vel Orun", ["director", "birthplace"]) == "What is the birthplace of the director of Vel Orun?"
    assert question_text("Vel Orun", ["director"]).startswith("Who ")


def test_sampling_helpers(world):
    rng = random.Random(0)
    docs = sample_documents(world.corpus(), 5, rng)
    assert len({d["id"] for d in docs}) == 5 and all(d["title"] and d["text"] for d in docs)
    hops = sample_hops({1: 4, 2: 3, 3: 2, 4: 1}, 2000, rng)
    share = [hops.count(h) / 2000 for h in (1, 2, 3, 4)]
    assert share == pytest.approx([0.4, 0.3, 0.2, 0.1], abs=0.04)


def test_config_errors_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match="solver_attempts"):
        DrZeroConfig(solver_attempts=1)
    with pytest.raises(ConfigError, match="p_low"):
        Agent0Config(p_low=0.9, p_high=0.2)
    with pytest.raises(ConfigError, match="proposer_estimator"):
        DrZeroConfig(proposer_estimator="ppo")
    with pytest.raises(ConfigError, match="unknown field"):
        DrZeroConfig.from_dict({"iteratons": 2})
    with pytest.raises(ConfigError, match="max_stepz"):
        DrZeroConfig(solver_agent={"max_stepz": 3})
    path = tmp_path / "evolve.toml"
    path.write_text("[evolve]\niterations = 2\nsolver_attempts = 3\n[evolve.hop_weights]\n1 = 1.0\n2 = 1.0\n")
    cfg = DrZeroConfig.load(path, prompts_per_iteration=4)
    assert (cfg.iterations, cfg.solver_attempts, cfg.prompts_per_iteration) == (2, 3, 4)
    assert cfg.hop_weights == {1: 1.0, 2: 1.0}
