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
# for dedenting, on text wrapped in newlines: a line of spaces/tabs and the blank lines after it;
# such a line alone; a line that starts at column 0
_BLANK_RUN = re.compile(r"\n[ \t]++\n[ \t\n]*(?=\n)")
_BLANK_LINE = re.compile(r"\n[ \t]++(?=\n)")
_UNINDENTED_LINE = re.compile(r"\n[^ \t\n]")
_NO_SPACE_TAB = str.maketrans("", "", " \t")
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
        first, pos = text[start + len(open_tag):end], end + len(close_tag)
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
    rest = text[start + len(THINK_OPEN):]
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
    return code[opening.end():close].rstrip()


def _dedent_block(code: str) -> str:
    """Drop the blank first/last lines models put around code, keep inner indentation."""
    first = len(code) - len(code.lstrip())  # the first non-blank character
    if first == len(code):
        return ""
    start = code.rfind("\n", 0, first) + 1  # the start of the first non-blank line
    end = code.find("\n", len(code.rstrip()))  # the end of the last non-blank line
    return _dedent(code[start:] if end == -1 else code[start:end])


def _dedent(text: str) -> str:
    """`textwrap.dedent`, with bulk string operations only (it compiles the margin into a regex,
    which takes seconds for a huge indent): lines of spaces and tabs become empty, then the
    longest run of spaces and tabs that starts every non-empty line is removed from each."""
    text = _BLANK_RUN.sub(lambda m: m.group().translate(_NO_SPACE_TAB), "\n" + text + "\n")
    text = _BLANK_LINE.sub("\n", text)[1:-1]
    if _UNINDENTED_LINE.search("\n" + text):
        return text  # some line starts at column 0: no common margin
    lines = list(filter(None, text.split("\n")))
    if not lines:
        return text
    # the common prefix of all lines is that of the least and the greatest
    low, high = min(lines), max(lines)
    margin = _common_prefix(low[:len(low) - len(low.lstrip(" \t"))], high[:len(high) - len(high.lstrip(" \t"))])
    if not margin:
        return text
    text = text.replace("\n" + margin, "\n")
    return text[len(margin):] if text.startswith(margin) else text


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
