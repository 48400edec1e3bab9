"""Parse one model turn into think + code, tolerantly and honestly.

Never raises. Every deviation from `<think>…</think><code>…</code>` sets a flag on the step:

| flag                | when                                            | what happens               |
|---------------------|-------------------------------------------------|----------------------------|
| `missing_think`     | no `<think>` at all                             | think is None              |
| `unclosed_think`    | `<think>` without `</think>`                    | think runs up to `<code>`  |
| `multiple_think`    | more than one think block                       | the first is kept          |
| `missing_code`      | no `<code>`                                     | nothing runs               |
| `unclosed_code`     | `<code>` without `</code>` (cut off)            | nothing runs               |
| `multiple_code`     | more than one code block                        | the first runs             |
| `empty_code`        | the code block is blank                         | nothing runs               |
| `fenced_code`       | a Markdown fence inside `<code>`                | the fence is stripped      |
| `text_outside_tags` | prose outside the think and code blocks         | ignored                    |

Linear time on any input: every scan is a forward `str.find`, a bulk string operation or a regex
whose backtracking is bounded by one line, so a degenerate turn (a megabyte of repeated tags, a
huge whitespace run inside a fence) parses in milliseconds. `bench/bench_parse.py` shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CODE_OPEN, CODE_CLOSE = "<code>", "</code>"
# the opening fence line: ```lang, then a newline (the closing fence is found from the end)
_FENCE_OPEN = re.compile(r"\s*+```[\w+-]*+[ \t]*+\n")
# for dedenting, on text wrapped in newlines: a line of only spaces/tabs; a line at column 0
_BLANK_LINE = re.compile(r"\n[ \t]++(?=\n)")
_UNINDENTED_LINE = re.compile(r"\n[^ \t\n]")
_INDENT = re.compile(r"\n([ \t]*)[^ \t\n]")  # a non-empty line's indent
_SHORT_MARGIN = 64
_BLANK_KINDS = 2  # kinds of blank line emptied by plain replacement before a regex pass does the rest
# Blocks, left to right: `<think>` up to `</think>`, the next `<code>` or the end; `<code>` up to
# `</code>` or the end. Possessive loops over runs of non-`<` characters: no backtracking, one pass.
_THINK_BLOCK = r"<think>[^<]*+(?:<(?!/think>|code>)[^<]*+)*+(?:</think>)?"
_CODE_BLOCK = r"<code>[^<]*+(?:<(?!/code>)[^<]*+)*+(?:</code>)?"
_ONLY_BLOCKS = re.compile(rf"(?:{_THINK_BLOCK}|{_CODE_BLOCK}|\s++)*+\Z")


@dataclass
class ParsedTurn:
    think: str | None
    code: str | None  # the code that will run; None when nothing runs
    flags: list[str] = field(default_factory=list)

    @property
    def well_formed(self) -> bool:
        return not self.flags


def parse_turn(text: str) -> ParsedTurn:
    """Split a generated turn into its think and code parts. See the module docstring."""
    flags: list[str] = []
    think = _parse_think(text, flags)
    code = _parse_code(text, flags)
    if _has_text_outside_tags(text):
        flags.append("text_outside_tags")
    return ParsedTurn(think=think, code=code, flags=flags)


def _blocks(text: str, open_tag: str, close_tag: str) -> tuple[str | None, bool]:
    """(the first closed `open…close` block's inside, whether a second one follows)."""
    first, pos = None, 0
    for _ in range(2):
        start = text.find(open_tag, pos)
        if start == -1:
            break
        end = text.find(close_tag, start + len(open_tag))
        if end == -1:
            break  # no close after this opening, so none after any later one either
        if first is not None:
            return first, True
        first, pos = text[start + len(open_tag) : end], end + len(close_tag)
    return first, False


def _parse_think(text: str, flags: list[str]) -> str | None:
    block, more = _blocks(text, THINK_OPEN, THINK_CLOSE)
    if more:
        flags.append("multiple_think")
    if block is not None:
        return block.strip()
    start = text.find(THINK_OPEN)
    if start == -1:
        flags.append("missing_think")
        return None
    flags.append("unclosed_think")
    rest = text[start + len(THINK_OPEN) :]
    end = rest.find(CODE_OPEN)
    return (rest if end == -1 else rest[:end]).strip()


def _parse_code(text: str, flags: list[str]) -> str | None:
    code, more = _blocks(text, CODE_OPEN, CODE_CLOSE)
    if code is None:
        flags.append("unclosed_code" if CODE_OPEN in text else "missing_code")
        return None
    if more:
        flags.append("multiple_code")
    fenced = _unfence(code)
    if fenced is not None:
        flags.append("fenced_code")
        code = fenced
    code = _dedent_block(code)
    if not code.strip():
        flags.append("empty_code")
        return None
    return code


def _unfence(code: str) -> str | None:
    """The inside of a block that is one Markdown fence (```lang\\n … ```), else None.

    The body runs from the opening line to the last non-blank characters, which must be ```;
    blank space before that closing fence is not part of it.
    """
    opening = _FENCE_OPEN.match(code)
    if opening is None:
        return None
    end = len(code.rstrip())
    close = end - 3
    if close < opening.end() or not code.startswith("```", close):
        return None
    return code[opening.end() : close].rstrip()


def _dedent_block(code: str) -> str:
    """Drop the blank first/last lines models put around code, keep inner indentation."""
    first = len(code) - len(code.lstrip())  # the first non-blank character
    if first == len(code):
        return ""
    start = code.rfind("\n", 0, first) + 1  # the start of the first non-blank line
    end = code.find("\n", len(code.rstrip()))  # the end of the last non-blank line
    return _dedent(code[start:] if end == -1 else code[start:end])


def _dedent(text: str) -> str:
    """`textwrap.dedent` with bulk string operations (it compiles the margin into a regex, which
    takes seconds for a huge indent): lines of spaces and tabs become empty, then the longest run
    of spaces and tabs that starts every non-empty line is removed from each."""
    text = _empty_blank_lines("\n" + text + "\n")[1:-1]
    margin = _margin("\n" + text)
    if not margin:
        return text
    text = text.replace("\n" + margin, "\n")
    return text[len(margin) :] if text.startswith(margin) else text


def _margin(text: str) -> str:
    """The longest run of spaces and tabs that starts every non-empty line of `text` (which starts
    with a newline and has no blank lines left)."""
    if _UNINDENTED_LINE.search(text):
        return ""  # some line starts at column 0
    first = _INDENT.search(text)
    if first is None:
        return ""
    margin, pos = first.group(1), first.start()
    while margin:  # shrink it at each line that breaks (its first characters: a short regex)
        other = re.compile(rf"\n(?!{margin[:_SHORT_MARGIN]})[ \t]*[^ \t\n]").search(text, pos)
        if other is None:
            break
        line = _INDENT.match(text, other.start())  # `other` found a non-blank line: it has an indent
        assert line is not None
        margin, pos = _common_prefix(margin, line.group(1)), other.start()
    if len(margin) <= _SHORT_MARGIN:
        return margin
    # every line starts with more than _SHORT_MARGIN blanks, so there are few: the common prefix of
    # all lines is that of the least and the greatest
    lines = list(filter(None, text.split("\n")))
    low, high = min(lines), max(lines)
    return _common_prefix(low[: len(low) - len(low.lstrip(" \t"))], high[: len(high) - len(high.lstrip(" \t"))])


def _empty_blank_lines(text: str) -> str:
    """Empty every line of only spaces and tabs in `text`, which starts and ends with a newline.

    Degenerate code repeats one or two kinds of blank line many times: each is emptied by
    `str.replace` (twice, as equal neighbours share a newline); a regex pass does any others.
    """
    pos = 0
    for _ in range(_BLANK_KINDS):
        blank = _BLANK_LINE.search(text, pos)
        if blank is None:
            return text
        pos, line = blank.start(), blank.group() + "\n"  # no blank line before `pos` is left
        text = text.replace(line, "\n\n").replace(line, "\n\n")
    return _BLANK_LINE.sub("\n", text)


def _common_prefix(a: str, b: str) -> str:
    low, high = 0, min(len(a), len(b))
    while low < high:  # bisect on the length, comparing only the half not known to agree
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return a[:low]


def _has_text_outside_tags(text: str) -> bool:
    """Is there anything but blank space outside the think and code blocks?"""
    return _ONLY_BLOCKS.match(text) is None


__all__ = ["ParsedTurn", "parse_turn"]
