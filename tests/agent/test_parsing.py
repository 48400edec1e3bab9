"""Parsing is tolerant and honest: every malformed turn gets a defined result and flags, never an exception."""

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent.parsing import parse_turn


def test_well_formed_turn():
    p = parse_turn("<think>look it up</think>\n<code>\nx = search('a')\nprint(x)\n</code>")
    assert p.think == "look it up"
    assert p.code == "x = search('a')\nprint(x)"
    assert p.flags == [] and p.well_formed


def test_missing_think_still_runs_code():
    p = parse_turn("<code>print(1)</code>")
    assert p.code == "print(1)" and "missing_think" in p.flags


def test_unclosed_think_stops_at_code():
    p = parse_turn("<think>hmm <code>print(2)</code>")
    assert p.think == "hmm" and p.code == "print(2)" and "unclosed_think" in p.flags


def test_missing_and_unclosed_code_run_nothing():
    assert parse_turn("<think>a</think> just prose").code is None
    assert "missing_code" in parse_turn("<think>a</think>").flags
    p = parse_turn("<think>a</think><code>print(1")
    assert p.code is None and "unclosed_code" in p.flags


def test_duplicates_keep_the_first():
    p = parse_turn("<think>a</think><think>b</think><code>x=1</code><code>x=2</code>")
    assert p.think == "a" and p.code == "x=1"
    assert {"multiple_think", "multiple_code"} <= set(p.flags)


def test_prose_outside_tags_is_flagged():
    p = parse_turn("Sure! <think>a</think><code>x=1</code> done")
    assert p.code == "x=1" and "text_outside_tags" in p.flags


def test_empty_code_runs_nothing():
    p = parse_turn("<think>a</think><code>   \n </code>")
    assert p.code is None and "empty_code" in p.flags


def test_fenced_code_is_unwrapped():
    p = parse_turn("<think>a</think><code>\n```python\nfor i in range(2):\n    print(i)\n```\n</code>")
    assert p.code == "for i in range(2):\n    print(i)" and "fenced_code" in p.flags


def test_indented_code_is_dedented_but_keeps_structure():
    p = parse_turn("<think>a</think><code>\n    if True:\n        print(1)\n</code>")
    assert p.code == "if True:\n    print(1)"


tag = st.sampled_from(["<think>", "</think>", "<code>", "</code>", "```", "```python\n", "\n", " "])
chunk = st.one_of(tag, st.text(max_size=20))


@settings(max_examples=400, deadline=None)
@given(st.lists(chunk, max_size=25).map("".join))
def test_any_text_parses_without_raising(text):
    p = parse_turn(text)
    assert p.code is None or p.code.strip()
    assert isinstance(p.flags, list)
    if p.flags == []:
        assert p.think is not None and p.code is not None
