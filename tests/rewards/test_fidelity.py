"""Seed mechanisms against values worked out by hand from the papers and their code."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.policies.scripted import ScriptedPolicy
from workbench.rewards import (
    LLMJudge,
    RewardSpec,
    asearcher_em,
    asearcher_prompt,
    cover_em,
    exact_match,
    get_reward,
    normalize_l0,
    register_judge,
    rescore,
    set_f1,
    token_f1,
    tool_invocations,
)
from workbench.rewards.judge import parse_verdict
from workbench.trajectory import HostCall, Step, Task, Trajectory


def traj(raws=(), golds=("Paris",), final=None, meta=None, role="solver", question="Where?"):
    return Trajectory(
        task=Task("q", question, list(golds), dict(meta or {})),
        role=role,
        final_answer=final,
        steps=[Step(i, r) for i, r in enumerate(raws)],
    )


# -- ASearcher set-F1 (AReaL/ASearcher/utils/rewards.py f1_score) ---------------------------------
def test_set_f1_keeps_articles_and_maps_bools():
    """Articles stay: {beatles} vs {the, beatles}: P = 1, R = 1/2, F1 = 2·(1·½)/(1 + ½) = 2/3.
    "True" → "yes" before normalising: {yes} vs {yes} = 1; "true" (lower case) is not mapped: 0.
    Punctuation becomes a space: "U.S." → {u, s} vs {u, s} = 1."""
    assert set_f1("Beatles", ["The Beatles"]) == pytest.approx(2 / 3)
    assert set_f1("True", ["yes"]) == 1.0 and set_f1("False", ["no"]) == 1.0
    assert set_f1("true", ["yes"]) == 0.0
    assert set_f1("U.S.", ["u s"]) == 1.0
    assert set_f1("the the cat", ["cat"]) == pytest.approx(2 / 3)  # sets: {the, cat} vs {cat}


def test_set_f1_chooses_the_cjk_path_by_the_gold_and_keeps_digit_runs():
    """Gold "北京2008" has ideographs, so both sides become character sets plus digit runs:
    gold {北, 京, 2008}; prediction "北京 2008年" → {北, 京, 年, 2008}: common 3, P = 3/4, R = 1,
    F1 = 2·(¾·1)/(¾ + 1) = 6/7. A Latin gold keeps word sets even for a CJK prediction:
    "Beijing" vs pred "北京 Beijing" → {北京, beijing}: P = ½, R = 1 → 2/3. "１２" (full width) are
    digits (a run "１２") but not in the dropped set, so they stay as characters too."""
    assert set_f1("北京 2008年", ["北京2008"]) == pytest.approx(6 / 7)
    assert set_f1("北京 Beijing", ["Beijing"]) == pytest.approx(2 / 3)
    # gold {东, 京}; pred {东, 京, ，} minus the dropped "，" = {东, 京} → 1
    assert set_f1("东京，", ["东京"]) == 1.0
    # digits alone: gold "第12届" → {第, 届, 12}; pred "第1届" → {第, 届, 1}: 2 common of 3 → 2/3
    assert set_f1("第1届", ["第12届"]) == pytest.approx(2 / 3)


def test_asearcher_em_maps_bools_then_squad():
    assert asearcher_em("True", ["yes"]) == 1.0 and asearcher_em("The Beatles!", ["beatles"]) == 1.0
    assert asearcher_em(None, ["x"]) == 0.0


def test_asearcher_prompt_templates():
    p = asearcher_prompt("Who wrote Emma?")
    assert "access cerain url by <access> url </access>" in p  # upstream's text, typos kept
    assert p.endswith(
        "\n\nUser: \n\nWho wrote Emma?. \n\nThe language of your answer should align with the "
        "question. \n\nAssistant: \n<think>\n"
    )
    only = asearcher_prompt("Q", access=False, valid_instruction=True)
    assert "<access>" not in only and "You should try to find the most likely answer. " in only
    assert "the question is invalid" not in only


# -- normalisers and QA metrics ------------------------------------------------------------------
def test_named_normalisers():
    """l0 keeps articles and drops non-ASCII: "The Beatles!" → "the beatles"; EM with "Beatles" is 0
    under l0 and 1 under squad (which drops "the")."""
    assert normalize_l0("The  Beatles!") == "the beatles" and normalize_l0("Café") == "caf"
    assert exact_match("Beatles", ["The Beatles"], "l0") == 0.0
    assert exact_match("Beatles", ["The Beatles"], "squad") == 1.0
    assert exact_match("Ｂｅａｔｌｅｓ", ["beatles"], "unicode") == 1.0
    with pytest.raises(ConfigError, match="normalizer"):
        exact_match("a", ["a"], "nope")


def test_golds_that_normalise_to_empty():
    """ "A" normalises to "" under squad (an article). Rule: compare light forms (casefold):
    "A" vs "a" → 1 for EM, cover-EM and F1; "the" vs "a" → 0 (both used to normalise to "").
    Under l0 every CJK gold normalises to "": 北京 vs 上海 → 0, 北京 vs 北京 → 1."""
    assert exact_match("A", ["a"]) == cover_em("A", ["a"]) == token_f1("A", ["a"]) == 1.0
    assert exact_match("the", ["a"]) == cover_em("the", ["a"]) == 0.0
    assert exact_match("上海", ["北京"], "l0") == 0.0 and exact_match("北京", ["北京"], "l0") == 1.0


def test_yes_no_rule_of_hotpotqa():
    """SQuAD F1("yes it is", "yes") = 2·(⅓·1)/(⅓ + 1) = 0.5; HotpotQA: gold is "yes" and the
    normalised sides differ → 0. "no" vs "no" stays 1."""
    assert token_f1("yes it is", ["yes"]) == pytest.approx(0.5)
    assert token_f1("yes it is", ["yes"], yes_no_rule=True) == 0.0
    assert token_f1("No.", ["no"], yes_no_rule=True) == 1.0
    assert get_reward("f1")(traj(final="yes it is", golds=["yes"]), yes_no_rule=True) == 0.0


texts = st.text(max_size=30)


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(texts, min_size=1, max_size=3), st.sampled_from(["squad", "unicode", "l0"]))
def test_cover_em_is_never_below_em(pred, golds, normalizer):
    assert cover_em(pred, golds, normalizer) >= exact_match(pred, golds, normalizer)
    assert 0.0 <= token_f1(pred, golds, normalizer, yes_no_rule=True) <= 1.0
    assert 0.0 <= set_f1(pred, golds) <= 1.0


# -- Agent0 tool count ------------------------------------------------------------------------------
def test_tool_count_has_no_double_count():
    """Three cells ran: a search (1 tool call), a search + print, and the submission.
    cells = 2 (the submitting cell is the answer, not tool use); calls = 2 searches.
    The old count (cells + calls = 3 + 2 = 5) counted each search twice."""
    t = traj(["a", "b", "c"])
    t.steps[0].observation, t.steps[1].observation, t.steps[2].observation = {"stdout": "x"}, {}, {}
    t.steps[0].host_calls = [HostCall("search", {})]
    t.steps[1].host_calls = [HostCall("search", {})]
    t.steps[2].host_calls = [HostCall("submit_final_answer", {"answer": "Paris"})]
    assert tool_invocations(t) == 2 and tool_invocations(t, "calls") == 2
    # as its own executor prediction: γ·min(2, 4) = 0.1
    assert get_reward("agent0.tool")(t) == pytest.approx(0.1)
    # a proposer: the executor's counts [1, 6] → (0.05 + 0.2)/2 = 0.125; none recorded → 0
    p = traj(role="proposer", meta=None)
    p.metadata["executor_tool_calls"] = [1, 6]
    assert get_reward("agent0.tool")(p) == pytest.approx(0.125)
    assert get_reward("agent0.tool")(traj(role="proposer")) == 0.0


# -- LLM judge -----------------------------------------------------------------------------------
def test_parse_verdict_like_asearcher():
    assert parse_verdict('```json\n{"rationale": "same", "judgement": "Correct"}\n```') is True
    assert parse_verdict('{"judgement": "Incorrect"}') is False
    assert parse_verdict('blah "judgement": "correct", trailing') is True
    assert parse_verdict("no idea") is None


def test_llm_judge_component_with_a_scripted_judge():
    """The scripted judge says Correct only when the prompt's predicted answer is "Paris, France".
    asearcher_judge = verdict × format: 1 × 1 = 1; a wrong answer 0; rescoring without the judge
    reuses the stored verdict."""
    prompts = []

    def judge_fn(context: str, turn: int) -> str:
        prompts.append(context)
        ok = "Predicted Answer: Paris, France" in context
        return '```json\n{"rationale": "r", "judgement": "%s"}\n```' % ("Correct" if ok else "Incorrect")

    register_judge("scripted", LLMJudge(ScriptedPolicy(judge_fn)))
    spec = RewardSpec(
        name="j", components=[{"name": "llm_judge", "params": {"judge": "scripted"}}], gate=["asearcher.format"]
    )
    good = traj(["x</think><answer>Paris, France</answer>"], question="Capital of France?")
    bad = traj(["x</think><answer>Lyon</answer>"], question="Capital of France?")
    assert spec.score(good)["total"] == 1.0 and spec.score(bad)["total"] == 0.0
    assert "Question: Capital of France?" in prompts[0] and "Labeled Answer: Paris" in prompts[0]
    calls = len(prompts)
    assert rescore([good], spec)[good.id]["total"] == 1.0 and len(prompts) == calls  # cached verdict
    fresh = traj(["<answer>Rome</answer>"])
    with pytest.raises(ConfigError, match="register_judge"):
        RewardSpec(name="k", components=[{"name": "llm_judge", "params": {"judge": "missing"}}]).score(fresh)
