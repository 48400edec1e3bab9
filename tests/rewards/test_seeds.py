"""Each seed's reward against hand-computed examples (papers' and code's forms)."""

import pytest
from reward_helpers import make_traj

from workbench.rewards import (
    RewardSpec,
    difficulty_score,
    drzero_format,
    get_reward,
    l0_step_rewards,
    self_consistency,
    tool_reward,
    uncertainty_code,
    uncertainty_paper,
)
from workbench.rewards.asearcher import turn_well_formed
from workbench.rewards.l0 import step_well_formed
from workbench.trajectory import HostCall

THINK, CODE = "<think>look it up first</think>", "<code>print(search('x'))</code>"


# -- L0 ------------------------------------------------------------------------------------------
def _l0_traj(final="Paris"):
    raws = [
        THINK + CODE,
        THINK + CODE,
        THINK + CODE + "<code>print(2)</code>",
        THINK + "<code>submit_final_answer('Paris')</code>",
    ]
    obs = {0: {"stdout": "doc"}, 1: {"stdout": "partial", "error_name": "NameError"}, 2: {}, 3: {}}
    return make_traj(raws, obs=obs, final=final, golds=["paris"])


def test_l0_step_format_rule():
    assert step_well_formed(THINK + CODE)
    assert not step_well_formed("<think>short</think>" + CODE)  # think must be > 10 chars
    assert not step_well_formed(THINK + "<code>x=1</code>")  # code must be > 5 chars
    assert not step_well_formed(THINK + CODE + CODE)


def test_l0_worked_example_fixed_and_upstream():
    t = _l0_traj()
    # format [1,1,0,1]/4; code fixed (1 + 1/2 + 1 + 1)/4, upstream (1 + 1/2 + 0 + 0)/4
    assert l0_step_rewards(t) == pytest.approx([0.05, 0.0375, 0.025, 0.85])
    assert RewardSpec.preset("l0").score(t) == pytest.approx(
        {"l0.qa": 1.0, "l0.format": 0.75, "l0.code": 0.875, "total": 0.9625}
    )
    assert sum(l0_step_rewards(t)) == pytest.approx(0.9625)
    up = RewardSpec.preset("l0_upstream").score(t)
    assert up["l0.code"] == 0.375 and up["total"] == pytest.approx(0.9125)
    assert sum(l0_step_rewards(t, no_output="zero")) == pytest.approx(0.9125)


def test_l0_has_answer_variants_and_nbformat_outputs():
    qa = get_reward("l0.qa")
    assert qa(_l0_traj(final="")) == 0.0
    assert qa(_l0_traj(final=""), has_answer="l0") == pytest.approx(0.1)  # L0 pays for ""
    assert qa(_l0_traj(final="London")) == pytest.approx(0.1)
    assert qa(_l0_traj(final=None)) == 0.0
    t = make_traj([THINK + CODE], obs={0: {"outputs": [{"output_type": "stream"}, {"output_type": "error"}]}})
    assert get_reward("l0.code")(t) == 0.5


# -- Dr. Zero -------------------------------------------------------------------------------------
def test_drzero_format_worked_examples():
    turns = [
        "<think>find the director</think><tool_call>{...}</tool_call>",
        "<think>done</think><question>Who directed Vel Orun?</question><answer>Tamira Kolvesh</answer>",
    ]
    kw = dict(question="Who directed Vel Orun?", answer="Tamira Kolvesh", hops=2)
    full = drzero_format(
        turns,
        **kw,
        document="Vel Orun is a film.",
        n_calls=1,
        n_responses=1,
        tool_results=["Vel Orun was directed by Tamira Kolvesh."],
    )
    assert full == {"think": 1.0, "tool": 1.0, "ans": 1.0, "integrity": 1.0, "format": 1.0}
    no_tool = drzero_format(turns, **kw, document="Directed by Tamira Kolvesh.")
    assert no_tool["tool"] == 0.0 and no_tool["format"] == 0.75
    assert drzero_format(turns, **kw, document="x", n_calls=1, n_responses=0)["ans"] == 0.0
    assert drzero_format(["no think", turns[1]], question="Is it?", answer="Yes", hops=1)["format"] == pytest.approx(
        (1 + 0.5 + 1 + 1) / 4
    )
    long = "a b c d e f g"
    assert drzero_format(turns, question="Q?", answer=long, hops=1, document=long)["ans"] == 0.5
    leak = drzero_format(
        turns, question="Is Tamira Kolvesh a poet?", answer="Tamira Kolvesh", hops=1, document="Tamira Kolvesh"
    )
    assert leak["integrity"] == 0.0 and leak["format"] == 0.0
    assert drzero_format([], question=None, answer=None, hops=3)["format"] == 0.0  # no crash


@pytest.mark.parametrize("k,expected", [(0, 0.0), (1, 1.0), (2, 0.75), (4, 0.25), (5, 0.0)])
def test_drzero_difficulty(k, expected):
    assert difficulty_score(k, 5) == expected


def _proposer(meta, answer="Tamira Kolvesh"):
    raws = [
        "<think>search the film</think>",
        f"<think>ok</think><question>Who directed Vel Orun?</question><answer>{answer}</answer>",
    ]
    calls = {0: [HostCall("search", {"query": "Vel Orun"}, result="directed by Tamira Kolvesh")]}
    return make_traj(
        raws, role="proposer", meta=meta, host_calls=calls, task_meta={"hops": 2, "document": "Vel Orun is a film."}
    )


def test_drzero_proposer_reward_as_coded():
    spec = RewardSpec.preset("drzero_proposer")
    assert spec.score(_proposer({"solver_correct": [1, 0, 0, 0, 0]}))["total"] == 1.5
    got = spec.score(_proposer({"solver_answers": ["Tamira Kolvesh", "tamira kolvesh!", "x", None, "y"]}))
    assert got == {"format": 1.0, "difficulty": 0.75, "total": 1.25}
    # an answer the document + results never mention: ans = 0, format 0.75, still gated in
    assert spec.score(_proposer({"solver_correct": [1, 0]}, answer="Zed"))["total"] == pytest.approx(0.5 * 0.75 + 1.0)
    bad = _proposer({"solver_correct": [1, 0, 0, 0, 0]}, answer="")
    assert spec.score(bad) == {"format": 0.0, "difficulty": 0.0, "total": 0.0}
    assert spec.score(_proposer({}))["difficulty"] == 0.0  # no solver results yet


def test_difficulty_over_a_solver_group():
    group = [make_traj([], final=a, task_id="q7") for a in ("Paris", "Rome", "Oslo", "Bern")]
    scores = RewardSpec(name="d", components=[{"name": "drzero.difficulty"}]).score_many(group)
    assert [s["total"] for s in scores] == [1.0] * 4


# -- Agent0 ---------------------------------------------------------------------------------------
def test_agent0_uncertainty_forms():
    assert (uncertainty_paper(0.3), uncertainty_code(0.3)) == pytest.approx((0.6, 0.3))
    assert (uncertainty_paper(0.5), uncertainty_code(0.5)) == (1.0, 0.5)
    assert (uncertainty_paper(1.0), uncertainty_code(1.0)) == (0.0, 0.0)
    assert self_consistency(["4", "4", "5", None]) == ("4", 0.5)
    assert self_consistency(["4", "4", "5", None], denominator="valid")[1] == pytest.approx(2 / 3)
    assert self_consistency([None, ""]) == (None, 0.0)


def test_agent0_tool_reward():
    assert tool_reward(2) == pytest.approx(0.1) and tool_reward(7) == pytest.approx(0.2)


def _curriculum(question, answer="12", executor=None, n_tools=2):
    raw = f"<think>design</think><question>{question}</question><answer>{answer}</answer>"
    if question is None:
        raw = "<think>design</think> \\boxed{12}"
    return make_traj(
        [raw],
        role="proposer",
        task_id=question or "none",
        meta={"executor_answers": executor or ["12"] * 6 + ["7"] * 4, "executor_tool_calls": n_tools},
    )


def test_agent0_curriculum_reward_code_and_paper():
    """Batch: q0 (answer 12), q1 (answer 13), q2 (no question); executor answers 6×"12", 4×"7",
    executor tool counts [2]. q2 has no question, so B = 2 and q0, q1 (no shared words) are
    clusters of one: R_rep = 1/2.
    code:  q0: p = 0.6, majority 12 = proposer's 12 → min(0.6, 0.4) = 0.4; tool counted in the
           curriculum agent's own output: no cell ran → 0; total 0.4 − 0.5 + 0 = −0.1.
           q1: majority 12 ≠ 13 → 0.  q2: no question → −1.
    paper: q0: 1 − 2|0.6 − 0.5| = 0.8; R_tool = 0.05·min(2, 4) = 0.1, ×0.6 = 0.06;
           max(0, 0.8 + 0.06 − 0.5) = 0.36.  q2: R_format = 0 → 0.
    floor: three copies of one question, executor all "1": p = 1 → R_unc = 0; one cluster of
           3 in B = 3 → R_rep = 1; max(0, 0 + 0.06 − 1) = 0.
    """
    batch = [
        _curriculum("what is the sum of the first ten primes"),
        _curriculum("how many ways to tile a 2 by 8 board", answer="13"),
        _curriculum(None),
    ]
    code = RewardSpec.preset("agent0").score_many(batch)
    # (upstream compared the majority with "2", the last character of "12", and paid 0)
    assert code[0]["agent0.uncertainty"] == pytest.approx(0.4)
    assert code[0]["agent0.repetition"] == pytest.approx(0.5) and code[0]["agent0.tool"] == 0.0
    assert code[0]["total"] == pytest.approx(-0.1)
    assert code[1]["agent0.uncertainty"] == 0.0
    assert code[2]["total"] == -1.0
    paper = RewardSpec.preset("agent0_paper").score_many(batch)
    assert paper[0]["agent0.tool"] == pytest.approx(0.1)
    assert paper[0]["total"] == pytest.approx(0.36)
    assert paper[2]["total"] == 0.0
    floor = RewardSpec.preset("agent0_paper").score_many([_curriculum("what is two plus two", executor=["1"] * 10)] * 3)
    assert [s["agent0.repetition"] for s in floor] == [1.0] * 3 and floor[0]["total"] == 0.0


def test_agent0_uncertainty_gate_below_a_tenth():
    lone = _curriculum("q", executor=[str(i) for i in range(10)])  # p = 0.1, not > 0.1
    assert get_reward("agent0.uncertainty")(lone) == 0.0
    assert get_reward("agent0.uncertainty")(lone, variant="paper") == pytest.approx(0.2)


# -- ASearcher ------------------------------------------------------------------------------------
def test_asearcher_turn_format():
    """correct_format_fn: <think> is not checked (the prompt opens it), at most one </think>."""
    assert turn_well_formed("<think>x</think><search>q</search>")
    assert turn_well_formed("x</think><search>q</search>")  # the prompt opened <think>
    assert turn_well_formed("<think>x<search>q</search>")
    assert not turn_well_formed("<search>q")
    assert not turn_well_formed("<search>a</search><answer>b</answer>")
    assert not turn_well_formed("<think>x</think> Assistant: <answer>b</answer>")
    assert not turn_well_formed("<think>a</think></think>")


def test_asearcher_format_times_set_f1_then_penalty():
    """good: set-F1("Paris France", "Paris") = 2·(1/2·1)/(1/2 + 1) = 2/3, format 1 → 2/3.
    bad: a turn with two actions → format 0 → 0·1 = 0.
    aug: F1("NYC", "New York City") = 0, F1 with aug "NYC" = 1 → 0.7·0 + 0.3·max(1, 0) = 0.3.
    invalid under the most-likely-answer instruction: −0.5, even with format 0 (upstream order)."""
    spec = RewardSpec.preset("asearcher")
    good = make_traj(["<think>x</think><search>q</search>", "<answer>Paris France</answer>"])
    assert spec.score(good)["total"] == pytest.approx(2 / 3)
    bad = make_traj(["<search>q</search><answer>Paris</answer>", "<answer>Paris</answer>"])
    assert spec.score(bad) == {"asearcher.reward": 0.0, "asearcher.f1": 1.0, "asearcher.format": 0.0, "total": 0.0}
    aug = make_traj(["<answer>NYC</answer>"], golds=["New York City"], task_meta={"aug_answers": ["NYC"]})
    assert spec.score(aug)["total"] == pytest.approx(0.3)
    invalid = make_traj(
        ["<answer>the question is invalid.</answer></think></think>"], task_meta={"valid_instruction": True}
    )
    assert spec.score(invalid)["asearcher.format"] == 0.0 and spec.score(invalid)["total"] == -0.5


def test_search_r1_and_zerosearch():
    t = make_traj(["<think>a</think><answer>Paris, France</answer>"])
    assert RewardSpec.preset("search_r1").score(t)["total"] == 0.0
    z = RewardSpec.preset("zerosearch").score(t)
    assert z == pytest.approx({"f1": 2 / 3, "cover_em": 1.0, "total": 2 / 3})
    none = make_traj(["<think>no answer tag</think>"])  # upstream crash input
    assert RewardSpec.preset("zerosearch").score(none)["total"] == 0.0
