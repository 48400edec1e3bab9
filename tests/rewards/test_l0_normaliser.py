"""L0's EM normaliser in `l0.qa`, `l0_step_rewards` and both L0 presets, against values worked by hand.

L0's code (`src/l0/verl_adapter/reward/nb_agent_reward.py`, `_normalize_text`): lowercase, delete
every character outside `[a-z0-9\\s]`, collapse whitespace. Articles stay; non-ASCII letters go.
"""

import pytest
from reward_helpers import make_traj

from workbench.rewards import RewardSpec, get_reward, l0_step_rewards

ONE_STEP = "<think>look it up first</think><code>print(search('band'))</code>"


def one_step(answer: str | None, gold: str):
    """T = 1, one well-formed step whose cell printed once without error: format 1/1, code (1 − 0/1)/1."""
    return make_traj([ONE_STEP], obs={0: {"stdout": "doc"}}, final=answer, golds=[gold])


def test_beatles_against_the_beatles_is_no_exact_match():
    """Answer "Beatles", gold "The Beatles".
    L0: "beatles" vs "the beatles" → EM 0; has_answer 1 → qa = 0.9·0 + 0.1·1 = 0.1.
    total = 0.8·qa + 0.1·format + 0.1·code = 0.8·0.1 + 0.1·1 + 0.1·1 = 0.28 (both presets: the answer is
    non-empty and the cell printed, so has_answer and no_output variants agree).
    (The SQuAD normaliser drops "the": EM 1, qa 1.0, total 1.0, which the presets gave before.)"""
    t = one_step("Beatles", "The Beatles")
    expected = {"l0.qa": 0.1, "l0.format": 1.0, "l0.code": 1.0, "total": 0.28}
    assert RewardSpec.preset("l0").score(t) == pytest.approx(expected)
    assert RewardSpec.preset("l0_upstream").score(t) == pytest.approx(expected)
    assert l0_step_rewards(t) == pytest.approx([0.28])
    assert get_reward("l0.qa")(t) == pytest.approx(0.1)
    assert get_reward("l0.qa")(t, normalizer="squad") == pytest.approx(1.0)


def test_case_punctuation_and_spacing_still_match():
    """Answer "THE  Beatles!", gold "The Beatles": both → "the beatles" → EM 1, qa 0.9 + 0.1 = 1.0,
    total 0.8 + 0.1 + 0.1 = 1.0."""
    t = one_step("THE  Beatles!", "The Beatles")
    assert RewardSpec.preset("l0").score(t) == pytest.approx(
        {"l0.qa": 1.0, "l0.format": 1.0, "l0.code": 1.0, "total": 1.0}
    )


def test_non_ascii_letters_are_dropped_as_in_l0():
    """Answer "Beyoncé", gold "Beyonce": "beyonc" vs "beyonce" → EM 0, qa 0.1.
    Answer "Beyoncé", gold "Beyonc": "beyonc" = "beyonc" → EM 1, qa 1.0 (L0's rule, followed as coded)."""
    qa = get_reward("l0.qa")
    assert qa(one_step("Beyoncé", "Beyonce")) == pytest.approx(0.1)
    assert qa(one_step("Beyoncé", "Beyonc")) == pytest.approx(1.0)


def test_gold_that_normalises_to_nothing_is_compared_by_light_form():
    """The one departure from L0: gold "北京" and answer "上海" both normalise to "" under L0's rule, so
    L0 scores EM 1. Here a gold that normalises to "" is compared by its light form (NFKC, casefold):
    "上海" ≠ "北京" → EM 0, qa 0.1; "北京" = "北京" → EM 1, qa 1.0."""
    qa = get_reward("l0.qa")
    assert qa(one_step("上海", "北京")) == pytest.approx(0.1)
    assert qa(one_step("北京", "北京")) == pytest.approx(1.0)


def test_the_presets_name_the_l0_normaliser():
    for name in ("l0", "l0_upstream"):
        (qa,) = [c for c in RewardSpec.preset(name).to_dict()["components"] if c["name"] == "l0.qa"]
        assert qa["params"]["normalizer"] == "l0"
