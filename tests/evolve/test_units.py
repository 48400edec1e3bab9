"""Unit tests: prompts, proposal read-back, format score inputs, votes, bands, Agent0 reward, configs."""

from __future__ import annotations

import random

import pytest

from workbench.errors import ConfigError
from workbench.evolve import (
    Agent0Config,
    DrZeroConfig,
    Proposal,
    format_components,
    in_band,
    majority_vote,
    proposal_of,
    proposer_task,
    sample_documents,
    sample_hops,
    uncertainty,
)
from workbench.evolve.modes import agent0_mode, drzero_mode
from workbench.evolve.phases import Proposed
from workbench.trajectory import HostCall, Step, Task, Trajectory
from workbench.worlds.scripted.proposer import next_turn, question_text


def proposer_traj(
    hops: int,
    raws: list[str],
    searches: list[str],
    question: str,
    answer: str,
    document: str = "(Title: Vel) Vel was directed by Ana Ro.",
) -> Trajectory:
    task = Task("p", "prompt", metadata={"hops": hops, "document": document})
    steps = [Step(index=i, raw=r) for i, r in enumerate(raws)]
    steps[0].host_calls = [HostCall("search", {"query": "q"}, result=s) for s in searches]
    steps[-1].host_calls.append(HostCall("submit_question", {"question": question, "answer": answer}, result="ok"))
    return Trajectory(task=task, role="proposer", steps=steps)


def test_proposal_is_read_from_the_last_successful_submit_call():
    traj = proposer_traj(1, ["<think>a</think><code>x</code>"], [], "Who directed Vel?", "Ana Ro")
    traj.steps[-1].host_calls.append(HostCall("submit_question", {"question": "bad", "answer": "x"}, error="boom"))
    assert proposal_of(traj) == Proposal("Who directed Vel?", "Ana Ro")
    assert proposal_of(Trajectory(task=Task("t", "q"))) is None


def test_format_components_follow_drzero():
    good = proposer_traj(
        2,
        ["<think>a</think><code>1</code>", "<think>b</think><code>2</code>"],
        ["Doc 1 (Title: Ana Ro) Ana Ro was born in the city of Lund."],
        "What is the birthplace of the director of Vel?",
        "Lund",
    )
    fmt = format_components(good)
    assert fmt == {"think": 1.0, "tool": 1.0, "ans": 1.0, "integrity": 1.0, "format": 1.0}
    # no search for a 2-hop question; half the turns without think; answer not in doc or results
    bad = proposer_traj(
        2,
        ["<think>a</think><code>1</code>", "<code>2</code>"],
        [],
        "What is the birthplace of the director of Vel?",
        "Paris",
    )
    fmt = format_components(bad)
    assert (fmt["think"], fmt["tool"], fmt["ans"]) == (0.5, 0.0, 0.0) and fmt["format"] == pytest.approx(1.5 / 4)
    leak = proposer_traj(1, ["<think>a</think>"], [], "Who is Ana Ro, director of Vel?", "Ana Ro")
    assert format_components(leak)["format"] == 0.0


@pytest.mark.parametrize("k,n,difficulty", [(0, 5, 0.0), (1, 5, 1.0), (3, 5, 0.5), (5, 5, 0.0)])
def test_drzero_reward_is_half_format_plus_difficulty(k, n, difficulty):
    """Dr. Zero eq. 4: difficulty = 1(0<k<n)·(n−k)/(n−1): k=1 of 5 → 4/4 = 1; k=3 → 2/4 = 0.5;
    k=0 or 5 → 0. Reward = 0.5·format + difficulty with format 1 → 0.5 + difficulty."""
    good = proposer_traj(
        2,
        ["<think>a</think><code>1</code>", "<think>b</think><code>2</code>"],
        ["Doc 1 (Title: Ana Ro) Ana Ro was born in the city of Lund."],
        "What is the birthplace of the director of Vel?",
        "Lund",
    )
    item = Proposed(
        good, proposal_of(good), attempts=_attempts(["Lund"] * k + ["Oslo"] * (n - k), gold="Lund"), valid=True
    )
    drzero_mode(DrZeroConfig()).score([item])
    assert item.rewards["format"] == 1.0 and item.rewards["difficulty"] == difficulty
    assert item.rewards["total"] == pytest.approx(0.5 + difficulty)
    assert good.metadata["solver_correct"] == [1.0] * k + [0.0] * (n - k)


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


def _attempts(answers, gold="Lund"):
    return [Trajectory(task=Task(f"a{i}", "q", [gold]), final_answer=a) for i, a in enumerate(answers)]


def test_agent0_reward_terms_and_gate():
    """Paper eq. 5 with λ_tool = 0.6, γ = 0.05, C = 4 and the executor's tool counts.
    Executor answers Lund ×3, Oslo ×2 → p̂ = 3/5 = 0.6, R_unc = 1 − 2|0.6 − 0.5| = 0.8.
    Executor cells (none submits): [2, 5, 0, 1, 3] → γ·min(N, 4) = [.1, .2, 0, .05, .15], mean 0.1.
    The proposer's own 2 searches do not count. Alone in its batch: R_rep = 1/1 = 1.
    R = 1·max(0, 0.8 + 0.6·0.1 − 1) = max(0, −0.14) = 0 (the floor).
    With a second, different question in the batch: R_rep = 1/2 → 0.8 + 0.06 − 0.5 = 0.36.
    No proposal: R_format = 0 → 0 (the code's −1 is the `agent0` preset's)."""
    mode = agent0_mode(Agent0Config())
    assert mode.proposer_spec.name == "agent0_paper" and mode.solver_spec.name == "agent0_executor"

    def item(question):
        traj = proposer_traj(2, ["<think>a</think>"], ["r1", "r2"], question, "Lund")
        attempts = _attempts(["Lund", "Lund", "Oslo", "Oslo", "Lund"])
        for a, cells in zip(attempts, [2, 5, 0, 1, 3], strict=True):
            a.steps = [Step(index=i, raw="", observation={"stdout": "x"}) for i in range(cells)]
        return Proposed(traj, proposal_of(traj), attempts=attempts, valid=True)

    alone = item("What is the birthplace of X?")
    mode.score([alone])
    r = alone.rewards
    assert r["agent0.uncertainty"] == pytest.approx(0.8) and r["agent0.tool"] == pytest.approx(0.1)
    assert r["agent0.repetition"] == 1.0 and r["total"] == 0.0
    pair = [item("What is the birthplace of X?"), item("Which river flows through the capital of Y?")]
    mode.score(pair)
    assert pair[0].rewards["agent0.repetition"] == 0.5 and pair[0].rewards["total"] == pytest.approx(0.36)
    empty = Proposed(Trajectory(task=Task("p", "prompt"), role="proposer"), None)
    mode.score([empty])
    assert empty.rewards["total"] == 0.0
    # code form: min(p, 1 − p) and 0 when the majority (Oslo) disagrees with the proposer (Lund)
    code = agent0_mode(Agent0Config(uncertainty_form="code"))
    wrong = item("What is the birthplace of X?")
    wrong.attempts = _attempts(["Oslo", "Oslo", "Lund"])
    code.score([wrong])
    assert code.proposer_spec.name == "agent0" and wrong.rewards["agent0.uncertainty"] == 0.0


def test_agent0_qa_set_keeps_the_band_and_labels_by_majority():
    mode = agent0_mode(Agent0Config(p_low=0.3, p_high=0.8))
    items = []
    for i, answers in enumerate(
        [
            ["Lund"] * 5,
            ["Lund", "Lund", "Oslo", "Oslo", "Lund"],
            ["A", "B", "C", "D", "E"],
            ["Oslo", "Oslo", "Oslo", "Lund", None],
        ]
    ):
        traj = proposer_traj(2, ["<think>a</think>"], ["r"], f"What is the birthplace of person {i}?", "Lund")
        items.append(Proposed(traj, proposal_of(traj), attempts=_attempts(answers), valid=True))
    mode.score(items)
    qa = mode.qa_set(items)
    # p (over valid answers): 1.0 (too easy), 0.6 (kept), 0.2 (too hard), 0.75 (kept, label from majority)
    assert [t.metadata["self_consistency"] for t in qa] == [pytest.approx(0.6), pytest.approx(0.75)]
    assert [t.golden_answers for t in qa] == [["Lund"], ["Oslo"]]
    assert qa[1].metadata["proposer_answer"] == "Lund" and not qa[1].metadata["label_agrees_with_proposer"]
    assert all(t.metadata["origin"] == it.traj.id for t, it in zip(qa, [items[1], items[3]], strict=True))
    assert all(it.rewards["agent0.repetition"] > 0 for it in items)  # near-identical questions share a cluster


def test_scripted_proposer_first_turn_reads_the_document():
    doc = {
        "id": "3",
        "title": "Vel Orun",
        "text": "Vel Orun is a war film released in 1990. Vel Orun was directed by Ana Ro.",
    }
    task = proposer_task(doc, 1, iteration=0)
    turn = next_turn("Task: " + task.question)
    assert "submit_question(" in turn and "search(" not in turn  # one hop: no search
    task = proposer_task(doc, 2, iteration=0)
    turn = next_turn("Task: " + task.question)
    assert "hop 1: the director of Vel Orun is Ana Ro" in turn and "search('Ana Ro', top_k=5)" in turn
    assert (
        question_text("Vel Orun", ["director", "birthplace"]) == "What is the birthplace of the director of Vel Orun?"
    )
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


def test_drzero_defaults_follow_the_paper_and_keep_the_best_format_sample():
    """Dr. Zero: 5 proposer samples per prompt, best format kept; solver n = 5; group sizes 1
    (proposer, HRPO) and 5 (solver). Agent0 App. A.1: 4 curriculum, 16 executor rollouts.
    Prompt 0's samples: format 1.0 (searched), 0.375 = (1 + 0.5 + 0 + 0)/4 (half the turns think,
    no search, answer not in the document); the first sample of prompt 1 (format 1.0 both) wins ties."""
    dz, a0 = DrZeroConfig(), Agent0Config()
    assert (dz.samples_per_prompt, dz.solver_attempts, dz.proposer_group_size, dz.solver_group_size) == (5, 5, 1, 5)
    assert (a0.samples_per_prompt, a0.solver_attempts, a0.proposer_group_size, a0.solver_group_size) == (1, 10, 4, 16)
    assert dz.proposer_spec().name == "drzero_proposer" and dz.solver_spec().name == "drzero_solver"
    custom = DrZeroConfig(format_weight=0.25).proposer_spec()
    assert custom.name.startswith("drzero_proposer~") and custom.components[0].weight == 0.25
    mode = drzero_mode(dz)
    good = ["<think>a</think><code>1</code>", "<think>b</think><code>2</code>"]
    found = ["Doc 1 (Title: Ana Ro) Ana Ro was born in the city of Lund."]
    q = "What is the birthplace of the director of Vel?"
    samples = [
        (0, proposer_traj(2, ["<think>a</think><code>1</code>", "<code>2</code>"], [], q, "Paris")),
        (0, proposer_traj(2, good, found, q, "Lund")),
        (1, proposer_traj(2, good, found, q, "Lund")),
        (1, proposer_traj(2, good, found, q, "Lund")),
    ]
    items = []
    for prompt, traj in samples:
        traj.task.metadata["prompt_index"] = prompt
        items.append(Proposed(traj, proposal_of(traj)))
    mode.gate(items)
    mode.select(items)
    assert [it.extra["format"]["format"] for it in items] == [0.375, 1.0, 1.0, 1.0]
    assert [it.chosen for it in items] == [False, True, True, False]
    assert len(mode.qa_set(items)) == 2
