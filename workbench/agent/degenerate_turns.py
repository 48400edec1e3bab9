"""Turns that made a regex-based turn parser quadratic: each shape maps a size `n` to a turn of
about `n` characters. `parse_turn` handles all of them in linear time; the tests pin it and
`bench/bench_parse.py` measures it."""

from collections.abc import Callable

DEGENERATE_TURNS: dict[str, Callable[[int], str]] = {
    "repeated <think>": lambda n: "<think>" * (n // 7),
    "repeated <code>": lambda n: "<code>" * (n // 6),
    "fence around a whitespace run": lambda n: "<code>```\n" + " " * n + "x</code>",
    "blank lines before code": lambda n: "<code>" + "\n" * n + "x</code>",
    "repeated <think><code>": lambda n: "<think><code>" * (n // 13),
    "repeated </think><think>": lambda n: "</think><think>" * (n // 15),
    "closed blocks": lambda n: "<think>a</think><code>x</code>" * (n // 30),
    "one huge indent": lambda n: "<code>" + " " * n + "x</code>",
    "indented lines": lambda n: "<code>" + "    x = 1\n" * (n // 10) + "</code>",
    "blank and code lines alternating": lambda n: "<code>" + "\t\n\t x\n" * (n // 6) + "</code>",
    "blank lines of many widths": lambda n: (
        "<code>" + "".join(" " * (i % 20 + 1) + "\nx\n" for i in range(n // 13)) + "</code>"
    ),
}
