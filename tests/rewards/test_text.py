import pytest

from workbench.errors import ConfigError
from workbench.rewards import (
    cover_em,
    exact_match,
    extract_answer,
    has_answer,
    normalize_answer,
    normalize_unicode,
    set_f1,
    token_f1,
)


def test_squad_normalisation():
    assert normalize_answer("The  Quick, Brown Fox!") == "quick brown fox"
    assert normalize_answer("an apple a day") == "apple day"
    assert exact_match("the Eiffel Tower.", ["eiffel tower"]) == 1.0


def test_unicode_normalisation():
    assert normalize_unicode("Ｐａｒｉｓ！") == "paris"
    assert normalize_unicode("Straße") == normalize_unicode("STRASSE")
    assert normalize_unicode("café—au lait") == "café au lait"
    assert exact_match("Ｐａｒｉｓ", ["paris"], "unicode") == 1.0


@pytest.mark.parametrize("normalizer", ["squad", "unicode"])
def test_different_cjk_answers_do_not_match(normalizer):
    assert exact_match("北京", ["上海"], normalizer) == 0.0
    assert exact_match("東京タワー", ["東京"], normalizer) == 0.0
    assert exact_match("北京。", ["北京"], "unicode") == 1.0
    assert token_f1("北京", ["上海"], normalizer) == 0.0


def test_cjk_token_f1_splits_characters_with_unicode():
    assert token_f1("北京大学", ["北京"], "unicode") == pytest.approx(2 / 3)
    assert set_f1("北京大学", ["北京"]) == pytest.approx(2 / 3)


def test_em_cover_em_and_aliases():
    assert exact_match("It is in Paris, France", ["Paris"]) == 0.0
    assert cover_em("It is in Paris, France", ["paris"]) == 1.0
    assert exact_match("Kolvesh", ["Tamira Kolvesh", "Kolvesh"]) == 1.0
    assert cover_em("x", [""]) == 0.0  # an empty gold is not in everything


def test_counter_f1_versus_set_f1():
    assert token_f1("the big red apple", ["red apple pie"]) == pytest.approx(2 / 3)
    assert token_f1("x x y", ["x y"]) == pytest.approx(0.8)  # P 2/3, R 1
    assert set_f1("x x y", ["x y"]) == 1.0
    assert set_f1("new-york", ["New York"]) == 1.0  # punctuation becomes a space
    assert token_f1("new-york", ["New York"]) == 0.0  # SQuAD deletes it: 'newyork'


def test_missing_answers_score_zero_instead_of_crashing():
    # ZeroSearch's extract_solution returns None here and normalize_answer(None) raises
    text = "<think>I do not know</think>"
    assert extract_answer(text) is None
    for metric in (exact_match, cover_em, token_f1):
        assert metric(extract_answer(text), ["Paris"]) == 0.0
    assert set_f1(None, ["Paris"]) == 0.0 and has_answer(None) == 0.0
    assert has_answer("   ") == 0.0 and has_answer("x") == 1.0


def test_last_answer_tag_wins():
    assert extract_answer("<answer> Beijing </answer> then <answer>Paris</answer>") == "Paris"
    assert extract_answer("<answer>multi\nline</answer>") == "multi\nline"


def test_unknown_normaliser():
    with pytest.raises(ConfigError, match="squad"):
        exact_match("a", ["a"], "ascii")
