"""One retrieved passage (`Hit`), and the one way its title and text are packed into Search-R1's `contents`.

    split_contents('"Paris"\\nParis is the capital.')   # ('Paris', 'Paris is the capital.')
    join_contents("Paris", "Paris is the capital.")    # '"Paris"\\nParis is the capital.'

Stdlib only, at the bottom of the layers: search, tools, worlds, train and evolve all read passages;
`workbench.search` re-exports `Hit` beside the `Retriever` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass
class Hit:
    """One retrieved passage.

    `id` is the corpus row's id (a string), `contents` the Search-R1 `"Title"\\ntext` string (by default
    `join_contents(title, text)`), `score` the retriever's score (higher is better; inner product for
    dense, BM25 for sparse).
    `document` is the whole corpus row as served over HTTP (`{"id", "contents", ...}`).
    `noisy` is set only by `SimulatedSearch`: whether the document was generated as noise.
    """

    id: str
    title: str
    text: str
    score: float = 0.0
    contents: str = ""
    document: dict[str, Any] = field(default_factory=dict)
    noisy: bool | None = None

    def __post_init__(self) -> None:
        if not self.contents and (self.title or self.text):
            self.contents = join_contents(self.title, self.text)

    @classmethod
    def from_row(cls, row: dict[str, Any], score: float = 0.0) -> Hit:
        """Build a hit from a corpus row (`id` + `contents`, or `id` + `title` + `text`)."""
        if "contents" in row:
            contents = str(row["contents"])
            title, text = split_contents(contents)
        else:
            title, text = str(row.get("title", "")), str(row.get("text", ""))
            contents = join_contents(title, text)
        doc = dict(row)
        doc.setdefault("contents", contents)
        return cls(
            id=str(row.get("id", "")), title=title, text=text, score=float(score), contents=contents, document=doc
        )

    def to_row(self) -> dict[str, Any]:
        """The corpus row (what Search-R1's server returns as `document`)."""
        return self.document or {"id": self.id, "contents": self.contents}


__all__ = ["Hit", "join_contents", "split_contents"]
