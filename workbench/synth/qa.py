"""A synthesized question as structure: the answer, a description tree, and the text it renders to.

The question is never free text that a checker must guess the meaning of: it is a `Desc` tree
(what identifies the answer) rendered to English by one regular grammar, and `parse_question`
reads that grammar back (the tool-using solver and the closed-book solver read questions only
from their text):

    Q    := ("Who" | "What") " is " D "?"
    D    := NAME | "the " KEY " of " D | "the " KIND " whose " CLUE (" and whose " CLUE)*
    CLUE := KEY " is " (NAME | NUMBER | SPAN | D)      # a clue whose value is a D comes last
    SPAN := "the early 1950s" | "the late 1950s" | "the 1950s" | "between 1940 and 1959"

    Desc(of=("director", Ref("Vel Orun", url)))                          the director of Vel Orun
    Desc(kind="film", clues=(Clue("director", Ref(...)), Clue("release year", "1950")))
                                   the film whose director is Tamira Kolvesh and whose release year is 1950
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import ConfigError


@dataclass(frozen=True)
class Ref:
    """A named entity: its page title and address (url "" when read back from text)."""

    name: str
    url: str = ""


@dataclass(frozen=True)
class Span:
    """A blurred number: every value in [low, high] matches."""

    low: int
    high: int

    @property
    def text(self) -> str:
        lo, hi = self.low, self.high
        if hi - lo == 9 and lo % 10 == 0:
            return f"the {lo}s"
        if hi - lo == 4 and lo % 5 == 0:
            return f"the {'early' if lo % 10 == 0 else 'late'} {lo - lo % 10}s"
        return f"between {lo} and {hi}"

    def contains(self, value: str) -> bool:
        return value.strip().isdigit() and self.low <= int(value) <= self.high


@dataclass(frozen=True)
class Clue:
    """`whose <key> is <value>`."""

    key: str
    value: Value


@dataclass(frozen=True)
class Desc:
    """A description of one entity: `the <of_key> of <of_subject>`, or `the <kind> whose <clues>`."""

    kind: str = ""
    of_key: str = ""
    of_subject: Value | None = None
    clues: tuple[Clue, ...] = ()

    def __post_init__(self) -> None:
        if bool(self.of_key) == bool(self.clues) or (self.of_key and self.of_subject is None):
            raise ConfigError(
                "a Desc is either `the KEY of X` (of_key, of_subject) or "
                "`the KIND whose ...` (clues), not both or neither"
            )

    @property
    def subject(self) -> Value:
        """`X` in `the KEY of X`; a `the KIND whose ...` description has none (ConfigError)."""
        if self.of_subject is None:
            raise ConfigError(f"`the {self.kind or 'one'} whose ...` has no subject; read its clues")
        return self.of_subject


Value = Ref | Span | Desc | str  # str: a literal (a year, an occupation) or a name read from text


# -- rendering -------------------------------------------------------------------------------
def render_value(value: Value) -> str:
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, Span):
        return value.text
    if isinstance(value, str):
        return value
    if value.of_key:
        return f"the {value.of_key} of {render_value(value.subject)}"
    clues = sorted(value.clues, key=lambda c: isinstance(c.value, Desc))  # a nested D comes last
    return f"the {value.kind or 'one'} whose " + " and whose ".join(
        f"{c.key} is {render_value(c.value)}" for c in clues
    )


def render_question(root: Value, answer_kind: str = "") -> str:
    """A question tree as text: "Who is ...?" for a person answer, else "What is ...?"."""
    wh = "Who" if answer_kind == "person" else "What"
    return f"{wh} is {render_value(root)}?"


# -- parsing ---------------------------------------------------------------------------------
_SPAN = re.compile(r"the (?:(early|late) )?(\d{3,4})s$|between (\d+) and (\d+)$")
_NUMBER = re.compile(r"-?\d+$")


def _span(text: str) -> Span | None:
    m = _SPAN.match(text)
    if not m:
        return None
    if m.group(3):
        return Span(int(m.group(3)), int(m.group(4)))
    decade = int(m.group(2))
    if m.group(1) == "early":
        return Span(decade, decade + 4)
    if m.group(1) == "late":
        return Span(decade + 5, decade + 9)
    return Span(decade, decade + 9)


def _parse_value(text: str) -> Value:
    text = text.strip()
    span = _span(text)
    if span is not None:
        return span
    if text.startswith("the "):
        return _parse_desc(text)
    return text


def _parse_desc(text: str) -> Value:
    if not text.startswith("the "):
        return text
    body = text[4:]
    of_at, whose_at = body.find(" of "), body.find(" whose ")
    if of_at < 0 and whose_at < 0:
        return text  # a name that starts with "the"
    if of_at >= 0 and (whose_at < 0 or of_at < whose_at):
        return Desc(of_key=body[:of_at], of_subject=_parse_value(body[of_at + 4 :]))
    kind, rest = body[:whose_at], body[whose_at + 7 :]
    clues: list[Clue] = []
    while True:
        key, sep, rest = rest.partition(" is ")
        if not sep:
            raise ValueError(f"clue {key!r} has no ' is '")
        if rest.startswith("the ") and _span(rest.split(" and whose ")[0]) is None:
            clues.append(Clue(key, _parse_desc(rest)))  # a nested description takes the rest
            break
        value, sep, rest = rest.partition(" and whose ")
        clues.append(Clue(key, _parse_value(value)))
        if not sep:
            break
    return Desc(kind="" if kind == "one" else kind, clues=tuple(clues))


def parse_question(text: str) -> Value | None:
    """The description tree of a question in the grammar above; None if it is not in it."""
    m = re.match(r"\s*(?:Who|What) is (.+?)\?\s*$", text or "", re.DOTALL)
    if not m:
        return None
    try:
        return _parse_value(m.group(1))
    except (ValueError, ConfigError):
        return None


# -- (de)serialisation -------------------------------------------------------------------------
def to_json(value: Value) -> Any:
    if isinstance(value, Ref):
        return {"ref": value.name, "url": value.url}
    if isinstance(value, Span):
        return {"span": [value.low, value.high]}
    if isinstance(value, str):
        return value
    if value.of_key:
        return {"kind": value.kind, "of": [value.of_key, to_json(value.subject)]}
    return {"kind": value.kind, "clues": [[c.key, to_json(c.value)] for c in value.clues]}


def from_json(data: Any) -> Value:
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        raise ConfigError(f"not a question tree node: {data!r}")
    if "ref" in data:
        return Ref(str(data["ref"]), str(data.get("url", "")))
    if "span" in data:
        return Span(int(data["span"][0]), int(data["span"][1]))
    if "of" in data:
        return Desc(kind=str(data.get("kind", "")), of_key=str(data["of"][0]), of_subject=from_json(data["of"][1]))
    return Desc(kind=str(data.get("kind", "")), clues=tuple(Clue(str(k), from_json(v)) for k, v in data["clues"]))


def refs(value: Value) -> list[Ref]:
    """Every named entity in the tree, outermost first."""
    if isinstance(value, Ref):
        return [value]
    if not isinstance(value, Desc):
        return []
    if value.of_key:
        return refs(value.subject)
    return [r for c in value.clues for r in refs(c.value)]


def replace(value: Value, old: Value | Clue, new: Value | Clue) -> Value:
    """The tree with the node or clue `old` (compared by value) replaced by `new`."""
    if value == old and not isinstance(new, Clue):
        return new
    if not isinstance(value, Desc):
        return value
    if value.of_key:
        return Desc(kind=value.kind, of_key=value.of_key, of_subject=replace(value.subject, old, new))
    return Desc(
        kind=value.kind,
        clues=tuple(
            new if isinstance(new, Clue) and c == old else Clue(c.key, replace(c.value, old, new)) for c in value.clues
        ),
    )


@dataclass
class Statement:
    """A supporting fact: the sentence, the page that states it, and what it says."""

    text: str
    url: str
    subject: str = ""
    key: str = ""
    value: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "url": self.url, "subject": self.subject, "key": self.key, "value": self.value}


@dataclass
class SynthQA:
    """The QA being grown: the answer never changes; the tree, the statements and the text do."""

    answer: str
    answer_url: str
    answer_kind: str
    tree: Value
    statements: list[Statement] = field(default_factory=list)
    question: str = ""

    def __post_init__(self) -> None:
        if not self.question:
            self.question = render_question(self.tree, self.answer_kind)

    @property
    def urls(self) -> list[str]:
        return list(dict.fromkeys(s.url for s in self.statements))

    @property
    def hops(self) -> int:
        """Facts a solver must find: one per supporting statement."""
        return len(self.statements)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "answer_url": self.answer_url,
            "answer_kind": self.answer_kind,
            "tree": to_json(self.tree),
            "statements": [s.to_dict() for s in self.statements],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SynthQA:
        return cls(
            str(data["answer"]),
            str(data.get("answer_url", "")),
            str(data.get("answer_kind", "")),
            from_json(data["tree"]),
            [Statement(**s) for s in data.get("statements", [])],
            str(data.get("question", "")),
        )


__all__ = [
    "Clue",
    "Desc",
    "Ref",
    "Span",
    "Statement",
    "SynthQA",
    "Value",
    "from_json",
    "parse_question",
    "refs",
    "render_question",
    "render_value",
    "replace",
    "to_json",
]
