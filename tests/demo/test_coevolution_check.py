"""The co-evolution checks' parts: the held-out change paired by question (real stores), the fixed check prompts
(seeded, the run's hop mix), and the lines scripts read. The whole check runs in the learned-proposer smoke runs."""

from __future__ import annotations

import pytest

from workbench.demo.coevolution import HeldoutChange, ProposerCheck, heldout_change
from workbench.store import Store
from workbench.trajectory import Task, Trajectory


def write_eval(path, em: dict[str, float]) -> None:
    with Store(path) as store:
        for qid, value in em.items():
            store.write(Trajectory(task=Task(qid, f"question {qid}?"), rewards={"em": value, "total": value}))


def test_the_held_out_change_pairs_the_same_questions(tmp_path):
    """After SFT 2 of 4 right (q1, q4), after RL 3 of 4 (q2 too): 50.0% -> 75.0%, change +25.0 points. Every
    per-question difference is 0 or +1 (one +1 in 4), so each bootstrap mean lies in [0, 1] and the interval
    too; with 10,000 resamples of 4, a mean of 0 (no q2 drawn: (3/4)^4 = 32%) is well inside the lower 2.5%."""
    write_eval(tmp_path / "sft", {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 1.0})
    write_eval(tmp_path / "final", {"q4": 1.0, "q2": 1.0, "q1": 1.0, "q3": 0.0})  # stored in another order
    change = heldout_change(tmp_path / "sft", tmp_path / "final", seed=0)
    assert change.first == [1.0, 0.0, 0.0, 1.0] and change.last == [1.0, 1.0, 0.0, 1.0]
    assert change.change == pytest.approx(0.25) and change.low == 0.0 and 0.25 <= change.high <= 1.0
    assert change.line().startswith("held-out accuracy: 50.0% -> 75.0% (change +25.0 [+0.0, ")
    assert heldout_change(tmp_path / "sft", tmp_path / "final", seed=0) == change  # seeded


def test_a_held_out_change_refuses_different_question_sets(tmp_path):
    write_eval(tmp_path / "a", {"q1": 1.0, "q2": 0.0})
    write_eval(tmp_path / "b", {"q1": 1.0, "q3": 0.0})
    with pytest.raises(ValueError, match="evaluated different questions"):
        heldout_change(tmp_path / "a", tmp_path / "b")


def test_the_lines_scripts_read():
    check = ProposerCheck(first=[0.0, 0.25], last=[0.5, 0.25], change=0.25, low=0.0, high=0.5)
    assert check.line() == "proposer difficulty: 0.125 -> 0.375 (change +0.250 [+0.000, +0.500])"
    held = HeldoutChange(first=[0.0, 1.0, 0.0], last=[1.0, 1.0, 0.0], change=1 / 3, low=0.0, high=2 / 3)
    assert held.line() == "held-out accuracy: 33.3% -> 66.7% (change +33.3 [+0.0, +66.7])"


def test_the_check_prompts_are_seeded_and_follow_the_hop_mix(tmp_path):
    from workbench.demo import DemoConfig
    from workbench.demo.coevolution import check_prompts
    from workbench.demo.models import TinyModel
    from workbench.demo.pipeline import Stages
    from workbench.demo.proposers import LearnedProposer

    def stages(seed: int) -> Stages:
        cfg = DemoConfig.preset("fast_learned", run_dir=str(tmp_path / f"run{seed}"), seed=seed)
        return Stages(cfg, lambda _line: None, False, model=TinyModel(), proposer=LearnedProposer())

    st = stages(0)
    prompts = check_prompts(st, 16)
    assert [t.metadata["prompt_index"] for t in prompts] == list(range(16))
    assert {t.metadata["hops"] for t in prompts} <= {int(h) for h in st.cfg.proposer_hop_weights}
    assert len({t.metadata["doc_id"] for t in prompts}) == 16  # distinct documents
    assert [t.question for t in check_prompts(st, 16)] == [t.question for t in prompts]
    assert [t.question for t in check_prompts(stages(1), 16)] != [t.question for t in prompts]


def test_the_check_groups_its_samples_by_the_hops_their_question_has():
    """Four samples of prompts that all asked for up to 4 hops: a 2-hop question the solver got 1 of 5 times
    (difficulty (5-1)/(5-1) = 1.0), a 2-hop one it got 3 of 5 ((5-3)/4 = 0.5), a 3-hop one it never got
    (k = 0: difficulty 0) and an episode that submitted nothing. By requested hops: one group of 4, valid 3/4,
    difficulty (1 + 0.5 + 0 + 0)/4 = 0.375, pass 4/15. By chain: 2 hops: 2 samples, pass (1 + 3)/10 = 40%, difficulty
    (1 + 0.5)/2 = 0.75; 3 hops: 1 sample, pass 0/5, difficulty 0; no chain: 1 sample."""
    from workbench.demo.coevolution import _chain_hops
    from workbench.evolve.difficulty import PromptDifficulty
    from workbench.evolve.phases import Proposed
    from workbench.evolve.proposer import Proposal

    def sample(question: str | None, correct: list[bool], difficulty: float) -> Proposed:
        traj = Trajectory(task=Task("p", "prompt", metadata={"hops": 4}), metadata={"solver_correct": correct})
        proposal = None if question is None else Proposal(question, "x")
        return Proposed(traj, proposal, rewards={"difficulty": difficulty}, valid=proposal is not None)

    two = "What is the capital of the country of Aldmoor?"
    three = "What is the capital of the country of the birthplace of Ada Vance?"
    scores = PromptDifficulty(
        per_prompt=[0.0],
        items=[
            sample(two, [True, False, False, False, False], 1.0),
            sample(two, [True, True, True, False, False], 0.5),
            sample(three, [False] * 5, 0.0),
            sample(None, [], 0.0),
        ],
    )
    assert scores.by_hop() == {4: {"samples": 4.0, "valid": 0.75, "difficulty": 0.375, "solver_pass": 4 / 15}}
    by_chain = scores.by_hop(key=_chain_hops)
    assert by_chain[2] == {"samples": 2.0, "valid": 1.0, "difficulty": 0.75, "solver_pass": 0.4}
    assert by_chain[3] == {"samples": 1.0, "valid": 1.0, "difficulty": 0.0, "solver_pass": 0.0}
    assert by_chain[0] == {"samples": 1.0, "valid": 0.0, "difficulty": 0.0, "solver_pass": 0.0}

    check = ProposerCheck([0.0], [0.0], 0.0, 0.0, 0.0, by_chain={"first": by_chain, "last": {2: by_chain[2]}})
    assert check.chain_lines()[1:] == [
        "    no chain       1 ->    0 samples",
        "    2 hops         2 ->    2 samples  pass  40% ->  40%  difficulty 0.75 -> 0.75",
        "    3 hops         1 ->    0 samples  pass   0% ->    -  difficulty 0.00 ->    -",
    ]
