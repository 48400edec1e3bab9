"""What a synthetic world is made of: entity types, relations, and how facts become sentences.

Every relation is single-valued (a film has one director), so following a chain of relations
from an entity gives exactly one answer. Each fact is stated literally in the passage of its
subject entity, which is what makes every question answerable from the corpus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ENTITY_TYPES = ("country", "city", "person", "film", "organisation")


@dataclass(frozen=True)
class Relation:
    """A single-valued relation. `target` is an entity type, or None for an attribute."""

    name: str
    subject: str
    phrase: str  # the noun used in questions and search queries: "the director of X"
    target: str | None


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation("directed_by", "film", "director", "person"),
        Relation("release_year", "film", "release year", None),
        Relation("founded_by", "organisation", "founder", "person"),
        Relation("headquartered_in", "organisation", "headquarters", "city"),
        Relation("founding_year", "organisation", "founding year", None),
        Relation("born_in", "person", "birthplace", "city"),
        Relation("birth_year", "person", "birth year", None),
        Relation("occupation", "person", "occupation", None),
        Relation("located_in", "city", "country", "country"),
        Relation("capital", "country", "capital", "city"),
    )
}

OCCUPATIONS = (
    "painter",
    "chemist",
    "sculptor",
    "poet",
    "architect",
    "botanist",
    "composer",
    "engineer",
    "historian",
    "astronomer",
    "novelist",
    "physician",
    "cartographer",
    "film director",
    "mathematician",
    "dancer",
)
GENRES = ("drama", "comedy", "mystery", "war", "musical", "science fiction", "adventure")
ORG_KINDS = ("Company", "Institute", "Society", "Foundation", "Guild", "Works")


@dataclass
class Entity:
    """One thing in the world; its passage id is `str(id)` (corpus row order is the id space)."""

    id: int
    type: str
    name: str
    attrs: dict[str, Any] = field(default_factory=dict)  # year, occupation, surname, genre …
    rels: dict[str, int] = field(default_factory=dict)  # relation name -> entity id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "name": self.name, "attrs": self.attrs, "rels": self.rels}


def render_passage(e: Entity, names: list[str]) -> str:
    """2–4 short sentences about `e`; `names[i]` is entity i's name."""
    a, r, n = e.attrs, e.rels, e.name
    if e.type == "person":
        return (
            f"{n} is a {a['occupation']} born in {a['birth_year']}. {n} was born in the city of {names[r['born_in']]}."
        )
    if e.type == "city":
        text = f"{n} is a city located in {names[r['located_in']]}."
        if a.get("is_capital"):
            text += f" {n} is the capital of {names[r['located_in']]}."
        return text + f" About {a['population']} thousand people live in {n}."
    if e.type == "country":
        return f"{n} is a country. The capital of {n} is {names[r['capital']]}."
    if e.type == "film":
        return (
            f"{n} is a {a['genre']} film released in {a['release_year']}. "
            f"{n} was directed by {names[r['directed_by']]}."
        )
    if e.type == "organisation":
        return (
            f"{n} is an organisation founded in {a['founding_year']} by "
            f"{names[r['founded_by']]}. The headquarters of {n} are in "
            f"{names[r['headquartered_in']]}."
        )
    raise ValueError(f"unknown entity type {e.type!r}")


def fact_value(e: Entity, relation: str, names: list[str]) -> str:
    """The surface string of one fact's object: a name for relations, the value for attributes."""
    rel = RELATIONS[relation]
    if rel.subject != e.type:
        raise KeyError(f"{e.type} {e.name!r} has no relation {relation!r}")
    if rel.target is None:
        return str(e.attrs[relation])
    return names[e.rels[relation]]
