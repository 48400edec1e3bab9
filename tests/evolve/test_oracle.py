"""The oracle solver (known pass probability per hop count), the hop proposer that feeds it, and the paired
bootstrap interval the mechanism check reports."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from workbench.errors import ConfigError
from workbench.evaluate.intervals import paired_change
from workbench.evolve.mechanism import OracleCheckResult
from workbench.evolve.oracle import PASS_BY_HOPS, OracleSolver, expected_difficulty, resolve_chain
from workbench.rewards.drzero import difficulty_score

DRAWS = 400


def test_pass_rate_per_hop_matches_the_table(world):
    """400 draws per hop count (one per sampling seed, spread over that hop's world questions). The pass
    share of p = 0.5 has standard deviation sqrt(0.5 · 0.5 / 400) = 0.025, of p = 0.95 or 0.05
    sqrt(0.95 · 0.05 / 400) = 0.011; the tolerance 0.1 is 4 of the larger, so a right oracle misses it with
    probability under 1e-4 (and the draws are seeded: the test is deterministic). p = 0 is never right."""
    oracle = OracleSolver(world, seed=3)
    by_hops = defaultdict(list)
    for task in world.tasks("train"):
        by_hops[task.metadata["hops"]].append(task)
    for hops, p in PASS_BY_HOPS.items():
        tasks = by_hops[hops]
        right = sum(
            oracle.answer(tasks[s % len(tasks)].question, s) == tasks[s % len(tasks)].golden_answers[0]
            for s in range(DRAWS)
        )
        assert abs(right / DRAWS - p) <= 0.1, (hops, right / DRAWS, p)
        assert oracle.pass_probability(tasks[0].question) == p
    assert right == 0  # four hops: never


def test_difficulty_expectation_is_worked_by_hand():
    # n = 5, p = 0.5: k = 1..4 with probabilities 5, 10, 10, 5 of 32, rewards 1, 0.75, 0.5, 0.25
    assert expected_difficulty(0.5, 5) == pytest.approx((5 * 1 + 10 * 0.75 + 10 * 0.5 + 5 * 0.25) / 32)
    assert expected_difficulty(1.0, 5) == expected_difficulty(0.0, 5) == 0.0
    # n = 2: only k = 1 counts, reward (2 - 1)/(2 - 1) = 1, probability 2p(1 - p)
    assert expected_difficulty(0.3, 2) == pytest.approx(2 * 0.3 * 0.7)
    with pytest.raises(ConfigError, match="n >= 2"):
        expected_difficulty(0.5, 1)


def test_draws_match_the_expected_difficulty_and_repeat_with_the_seed(world):
    """Groups of n = 5 seeded attempts at 2-hop questions: the mean difficulty over 200 groups is near
    0.586 (its standard deviation is under 0.35 / sqrt(200) = 0.025; tolerance 0.1)."""
    two_hop = [t for t in world.tasks("train") if t.metadata["hops"] == 2][:200]
    oracle = OracleSolver(world, seed=0)
    rewards = []
    for task in two_hop:
        k = sum(oracle.answer(task.question, s) == task.golden_answers[0] for s in range(5))
        rewards.append(difficulty_score(k, 5))
    assert abs(sum(rewards) / len(rewards) - expected_difficulty(0.5, 5)) <= 0.1
    again = OracleSolver(world, seed=0)
    q = two_hop[0].question
    assert [oracle.answer(q, s) for s in range(20)] == [again.answer(q, s) for s in range(20)]
    other = OracleSolver(world, seed=1)
    assert [oracle.answer(q, s) for s in range(20)] != [other.answer(q, s) for s in range(20)]


def test_bad_tables_unseeded_episodes_and_unknown_chains(world):
    with pytest.raises(ConfigError, match="pass_by_hops"):
        OracleSolver(world, pass_by_hops={1: 1.5})
    with pytest.raises(ConfigError, match="pass_by_hops"):
        OracleSolver(world, pass_by_hops={})
    oracle = OracleSolver(world, pass_by_hops={2: 1.0})
    question = next(t for t in world.tasks("train") if t.metadata["hops"] == 3)
    assert oracle.pass_probability(question.question) == 1.0  # more hops than listed: the last entry's
    assert oracle.answer(question.question, 0) == question.golden_answers[0]
    one_hop = next(t for t in world.tasks("train") if t.metadata["hops"] == 1)
    assert oracle.pass_probability(one_hop.question) == 0.0  # fewer hops than any listed
    with pytest.raises(ConfigError, match="seeded episodes"):
        oracle.answer(question.question, None)
    assert oracle.pass_probability("What is the capital of Nowhere Land?") == 0.0
    assert oracle.pass_probability("How are you?") == 0.0 and oracle.hops_of("How are you?") is None
    assert resolve_chain(world, world.entities[0].name, ["no such relation"]) is None


def test_paired_bootstrap_interval_by_hand():
    # diffs [0, 1]: a resample of two is (0, 0), (0, 1), (1, 0) or (1, 1): means 0, 0.5, 1 with
    # probabilities 1/4, 1/2, 1/4, so the 2.5th percentile is 0 and the 97.5th is 1
    assert paired_change([0.0, 0.0], [0.0, 1.0], resamples=4000, seed=0) == (0.5, 0.0, 1.0)
    # every prompt gains 0.2: every resample's mean is 0.2
    change, low, high = paired_change([0.1, 0.3, 0.0], [0.3, 0.5, 0.2], seed=7)
    assert change == pytest.approx(0.2) and low == pytest.approx(0.2) and high == pytest.approx(0.2)
    assert paired_change([0.1, 0.4], [0.2, 0.9], seed=1) == paired_change([0.1, 0.4], [0.2, 0.9], seed=1)


def test_the_printed_line_scripts_parse():
    result = OracleCheckResult([0.0, 0.5], [0.5, 0.5], 0.25, 0.0, 0.5, {1: 2}, {2: 2}, {})
    line = result.line()
    assert line == "oracle difficulty: 0.250 -> 0.500 (change +0.250 [+0.000, +0.500])"
    pattern = r"oracle difficulty: ([\d.]+) -> ([\d.]+) \(change ([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\]\)"
    assert re.fullmatch(pattern, line)


@pytest.mark.slow
def test_hop_teacher_questions_resolve_and_the_oracle_attempts_them_in_kernels(tmp_path, world, retriever):
    """Real kernels: the hop teacher's questions are chains of the world whose answer is the proposer's, and
    each valid one gets n one-turn oracle attempts whose verdicts are the proposer's k of n."""
    from workbench.evolve import DrZeroConfig, run_drzero
    from workbench.evolve.hop_proposer import hop_agent, hop_teacher

    oracle = OracleSolver(world, seed=0)
    cfg = DrZeroConfig(
        run_dir=str(tmp_path / "dz"),
        prompts_per_iteration=6,
        samples_per_prompt=1,
        hop_weights={4: 1.0},
        solver_attempts=4,
        concurrency=2,
        progress=False,
        proposer_agent=hop_agent(max_new_tokens=128),  # the teacher writes bytes
        solver_agent={"max_steps": 1, "prompt": "compact"},
    )
    result = run_drzero(cfg, proposer_policy=hop_teacher(seed=1), solver_policy=oracle, retriever=retriever)
    store = result.store
    proposers = list(store.iter_trajectories(role="proposer"))
    assert len(proposers) == 6 and all(t.termination == "submitted" for t in proposers)
    hops = set()
    for prop in proposers:
        question = prop.metadata["question"]
        hops.add(oracle.hops_of(question))
        assert resolve_chain(world, *_chain(question)) == prop.final_answer
        attempts = store.children(prop.id)
        assert len(attempts) == 4 and all(len(a.steps) == 1 for a in attempts)
        verdicts = [float(a.final_answer == prop.final_answer) for a in attempts]
        assert prop.metadata["solver_correct"] == verdicts
        assert prop.rewards["difficulty"] == difficulty_score(int(sum(verdicts)), 4)
    assert len(hops) >= 2 and hops <= {1, 2, 3, 4}  # the teacher asks after different numbers of hops
    store.close()


def _chain(question: str) -> tuple[str, list[str]]:
    from workbench.worlds.scripted.solver import parse_chain_question

    parsed = parse_chain_question(f"Task: {question}")
    assert parsed is not None, question
    return parsed
