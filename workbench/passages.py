"""One retrieved passage (`Hit`), the one way its title and text are packed into Search-R1's `contents`, and
the one way hits become the text a model reads (`format_hits`, with named styles).

    split_contents('"Paris"\\nParis is the capital.')   # ('Paris', 'Paris is the capital.')
    join_contents("Paris", "Paris is the capital.")    # '"Paris"\\nParis is the capital.'
    format_hits(hits)                      # Dr. Zero / verl style
    format_hits(hits, style="search_r1")   # original Search-R1 style
    format_hits(hits, style="tool")        # workbench's search tool: one line per hit, "No results." if none
    format_hits(hits, template="[{i}] {title}: {text}", sep="\\n")

Stdlib only, at the bottom of the layers: search, tools, worlds, train and evolve all read passages;
`workbench.search` re-exports `Hit` beside the `Retriever` protocol.
"""

from __future__ import annotations

from collections.abc import Iterable
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

    @classmethod
    def coerce(cls, hit: object) -> Hit:
        """A `Hit` from any hit-like value: a `Hit`; an object or dict with `title` and `text`, or with a
        Search-R1 `contents`; or a Search-R1 server row (`{"document": {...}, "score": s}`)."""
        if isinstance(hit, Hit):
            return hit
        score = _field(hit, "score")
        if isinstance(hit, dict) and isinstance(hit.get("document"), dict):
            hit = hit["document"]
        title, text, contents = _field(hit, "title"), _field(hit, "text"), _field(hit, "contents")
        if text is None and contents is not None:
            head, text = split_contents(str(contents))
            title = title or head
        return cls(
            id=str(_field(hit, "id") or ""),
            title=str(title or ""),
            text=str(text or ""),
            score=float(score) if isinstance(score, int | float) else 0.0,
        )


def _field(hit: object, name: str) -> Any:
    return hit.get(name) if isinstance(hit, dict) else getattr(hit, name, None)


STYLES: dict[str, tuple[str, str]] = {
    # Dr. Zero / verl `search_r1_like_utils`: "Doc 1 (Title: t)\ntext", blank line between docs.
    "drzero": ("Doc {i} (Title: {title})\n{text}", "\n\n"),
    # Original Search-R1 `generation.py`: "Doc 1(Title: t) text", one per line.
    "search_r1": ("Doc {i}(Title: {title}) {text}", "\n"),
    # workbench's `search` tool: "Doc 1 (Title: t) text", one per line.
    "tool": ("Doc {i} (Title: {title}) {text}", "\n"),
}


def format_hits(
    hits: Iterable[object],
    style: str = "drzero",
    *,
    template: str | None = None,
    sep: str | None = None,
    quote_titles: bool = False,
    empty: str = "",
) -> str:
    """Render hits as the text a search tool hands back to the model.

    `hits` are `Hit`s or anything `Hit.coerce` reads. `style` picks a preset (`"drzero"`, `"search_r1"`,
    `"tool"`); `template` (placeholders `{i}`, `{title}`, `{text}`, `{id}`, `{score}`) and `sep` override it.
    Upstream clients take the raw first line of `contents` as the title, quotes included; pass
    `quote_titles=True` to match them byte for byte. `empty` is the text for no hits.
    """
    from workbench.errors import ConfigError

    if template is None:
        if style not in STYLES:
            raise ConfigError(f"unknown hit style {style!r}; use one of {sorted(STYLES)} or pass template=")
        template, default_sep = STYLES[style]
    else:
        default_sep = "\n\n"
    sep = default_sep if sep is None else sep
    parts = []
    for i, hit in enumerate(map(Hit.coerce, hits), start=1):
        title = f'"{hit.title}"' if quote_titles else hit.title
        parts.append(template.format(i=i, title=title, text=hit.text, id=hit.id, score=hit.score))
    return sep.join(parts) if parts else empty


__all__ = ["STYLES", "Hit", "format_hits", "join_contents", "split_contents"]
