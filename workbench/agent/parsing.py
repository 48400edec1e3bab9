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
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_CODE = re.compile(r"<code>(.*?)</code>", re.DOTALL)
_FENCE = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_ANY_TAG_BLOCK = re.compile(r"<think>.*?(?:</think>|(?=<code>)|$)|<code>.*?(?:</code>|$)", re.DOTALL)


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
    if _ANY_TAG_BLOCK.sub("", text).strip():
        flags.append("text_outside_tags")
    return ParsedTurn(think=think, code=code, flags=flags)


def _parse_think(text: str, flags: list[str]) -> str | None:
    blocks = _THINK.findall(text)
    if len(blocks) > 1:
        flags.append("multiple_think")
    if blocks:
        return blocks[0].strip()
    start = text.find("<think>")
    if start == -1:
        flags.append("missing_think")
        return None
    flags.append("unclosed_think")
    rest = text[start + len("<think>"):]
    end = rest.find("<code>")
    return (rest if end == -1 else rest[:end]).strip()


def _parse_code(text: str, flags: list[str]) -> str | None:
    blocks = _CODE.findall(text)
    if not blocks:
        flags.append("unclosed_code" if "<code>" in text else "missing_code")
        return None
    if len(blocks) > 1:
        flags.append("multiple_code")
    code = blocks[0]
    fenced = _FENCE.match(code)
    if fenced:
        flags.append("fenced_code")
        code = fenced.group(1)
    code = _dedent_block(code)
    if not code.strip():
        flags.append("empty_code")
        return None
    return code


def _dedent_block(code: str) -> str:
    """Drop the blank first/last lines models put around code, keep inner indentation."""
    lines = code.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return textwrap.dedent("\n".join(lines))


__all__ = ["ParsedTurn", "parse_turn"]
