"""The one way a passage's title and text are packed into Search-R1's `contents` string and read back.

    split_contents('"Paris"\\nParis is the capital.')   # ('Paris', 'Paris is the capital.')
    join_contents("Paris", "Paris is the capital.")    # '"Paris"\\nParis is the capital.'

Stdlib only, at the bottom of the layers: search, tools, worlds, train and evolve all read passages.
"""

from __future__ import annotations


def split_contents(contents: str) -> tuple[str, str]:
    """Split a Search-R1 `contents` string (`"Title"\\ntext`) into (title, text).

    The title is the first line, stripped, with one pair of surrounding double quotes removed; the
    text is the rest, as is. Without a newline the whole string is the title.
    """
    first, _, rest = contents.partition("\n")
    title = first.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, rest


def join_contents(title: str, text: str) -> str:
    """The inverse of `split_contents`: `"Title"\\ntext`."""
    return f'"{title}"\n{text}'


__all__ = ["join_contents", "split_contents"]
