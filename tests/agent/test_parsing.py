"""Parsing is tolerant and honest: every malformed turn gets a defined result and flags, never an exception."""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.agent.degenerate_turns import DEGENERATE_TURNS
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


# -- the same behaviour as the regex definition, in linear time ----------------------------------


def _regex_parse(text):
    """The parser's behaviour written as regexes (quadratic on repeated tags): the oracle on small inputs."""
    import re
    import textwrap

    think_re = re.compile(r"<think>(.*?)</think>", re.DOTALL)
    code_re = re.compile(r"<code>(.*?)</code>", re.DOTALL)
    fence_re = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?\s*```\s*$", re.DOTALL)
    any_block = re.compile(r"<think>.*?(?:</think>|(?=<code>)|$)|<code>.*?(?:</code>|$)", re.DOTALL)
    flags = []
    blocks = think_re.findall(text)
    if len(blocks) > 1:
        flags.append("multiple_think")
    if blocks:
        think = blocks[0].strip()
    elif "<think>" not in text:
        think = None
        flags.append("missing_think")
    else:
        flags.append("unclosed_think")
        rest = text[text.find("<think>") + 7 :]
        think = (rest if "<code>" not in rest else rest[: rest.find("<code>")]).strip()
    code = None
    blocks = code_re.findall(text)
    if not blocks:
        flags.append("unclosed_code" if "<code>" in text else "missing_code")
    else:
        if len(blocks) > 1:
            flags.append("multiple_code")
        code = blocks[0]
        fenced = fence_re.match(code)
        if fenced:
            flags.append("fenced_code")
            code = fenced.group(1)
        lines = code.split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        code = textwrap.dedent("\n".join(lines))
        if not code.strip():
            flags.append("empty_code")
            code = None
    if any_block.sub("", text).strip():
        flags.append("text_outside_tags")
    return think, code, flags


piece = st.one_of(
    st.sampled_from(
        [
            "<think>",
            "</think>",
            "<code>",
            "</code>",
            "```",
            "```python\n",
            "```py \t\n",
            "\n",
            " ",
            "\t",
            "  x",
            "\u00a0",
            "\u2028",
            "<",
            ">",
            "</",
            "x",
            "print(1)",
            "    if a:\n",
        ]
    ),
    st.text(max_size=8),
)


inside = st.lists(piece, max_size=6).map("".join)
fenced = st.tuples(
    st.sampled_from(["", "\n", " \n"]),
    st.sampled_from(["```", "```python", "```py \t", "```c++"]),
    st.sampled_from(["\n", ""]),
    inside,
    st.sampled_from(["", "\n", " \n  "]),
    st.sampled_from(["```", "``", ""]),
    st.sampled_from(["", "\n", " x", "``` "]),
).map("".join)
block = st.tuples(
    st.sampled_from(["<think>", "<code>"]), st.one_of(inside, fenced), st.sampled_from(["</think>", "</code>", ""])
).map("".join)
turns = st.one_of(st.lists(piece, max_size=30).map("".join), st.lists(st.one_of(block, piece), max_size=8).map("".join))


@settings(max_examples=1500, deadline=None)
@given(turns)
def test_same_result_as_the_regex_definition(text):
    p = parse_turn(text)
    assert (p.think, p.code, p.flags) == _regex_parse(text)


code_line = st.tuples(
    st.sampled_from(["", " ", "  ", "\t", "    ", " \t", "\u00a0"]),
    st.sampled_from(["", "x", "if a:", "\r", "  ", "```"]),
).map("".join)
code_body = st.lists(code_line, max_size=12).map("\n".join)


@settings(max_examples=800, deadline=None)
@given(code_body, st.booleans())
def test_dedent_matches_the_regex_definition(body, fence):
    text = "<think>t</think><code>" + ("```py\n" + body + "\n```" if fence else body) + "</code>"
    p = parse_turn(text)
    assert (p.think, p.code, p.flags) == _regex_parse(text)


any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())  # surrogates too
any_text = st.lists(st.one_of(tag, st.text(any_char, max_size=20)), max_size=40).map("".join)
KNOWN_FLAGS = {
    "missing_think",
    "unclosed_think",
    "multiple_think",
    "missing_code",
    "unclosed_code",
    "multiple_code",
    "empty_code",
    "fenced_code",
    "text_outside_tags",
}


@settings(max_examples=1000, deadline=None)
@given(any_text)
def test_arbitrary_text_gives_a_consistent_result(text):
    p = parse_turn(text)
    assert set(p.flags) <= KNOWN_FLAGS and len(set(p.flags)) == len(p.flags)
    assert p.well_formed == (not p.flags)
    assert ("missing_think" in p.flags) == ("<think>" not in text) == (p.think is None)
    assert ("missing_code" in p.flags) == ("<code>" not in text)
    if p.think is not None:
        assert p.think in text and p.think == p.think.strip()
    if p.code is None:
        assert {"missing_code", "unclosed_code", "empty_code"} & set(p.flags)
    else:
        assert p.code.strip() and "</code>" in text
        # dedenting only removes a common indent: every line of the code is a piece of the turn
        assert all(line in text for line in p.code.split("\n"))
        if "fenced_code" not in p.flags and not p.code[0].isspace():
            assert p.code.split("\n")[0] in text.split("<code>", 1)[1]


# -- degenerate turns: linear time ----------------------------------------------------------------

MB = 1_000_000
DEGENERATE = DEGENERATE_TURNS  # shape -> turn of about `n` characters


@pytest.mark.parametrize("shape", DEGENERATE)
def test_a_megabyte_degenerate_turn_parses_in_linear_time(shape):
    # a generous bound that only a quadratic parser misses (bench/bench_parse.py shows ~ms per MB)
    text = DEGENERATE[shape](MB)
    t0 = time.perf_counter()
    p = parse_turn(text)
    assert time.perf_counter() - t0 < 2.0, shape
    assert isinstance(p.flags, list)


def test_degenerate_turns_parse_as_defined():
    assert parse_turn("<think>" * 1000).flags == ["unclosed_think", "missing_code"]
    assert parse_turn("<code>" * 1000).flags == ["missing_think", "unclosed_code"]
    p = parse_turn("<code>```\n" + " " * 1000 + "x</code>")
    assert p.code == "```\n" + " " * 1000 + "x" and p.flags == ["missing_think"]  # no closing fence: kept
    p = parse_turn("<code>```\n" + " " * 1000 + "x\n" + " " * 1000 + "```  \n</code>")
    assert p.code == "x" and p.flags == ["missing_think", "fenced_code"]
    p = parse_turn("<think>a</think><code>" + "\n" * 1000 + "  x = 1\n\n</code>")
    assert p.code == "x = 1" and p.well_formed
