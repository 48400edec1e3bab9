"""Multi-hop questions: follow a chain of relations from a start entity to an answer.

    "Who is the director of Vel Orun?"                                   1 hop
    "What is the country of the birthplace of the director of Vel Orun?" 3 hops

A question is `What/Who is the r_n of the r_(n-1) of … of <start>?`: regular on purpose, so a
tiny model can learn the pattern. Each hop names its supporting passage (the passage of the hop's
subject entity, which states the fact literally) and a search query a scripted solver can send:
`"<entity> <relation phrase>"`, e.g. `"Vel Orun director"`.

Split rule (no answer leakage): a seeded fraction of entities is *held out*. A question is a test
question when the subject of its last hop is held out (so the passage stating its answer is held
out); it is a train question when no hop's subject is held out. Hence no train question ever uses
the fact that answers a test question, at any hop. Other questions are dropped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.trajectory import Task
from workbench.worlds.schema import RELATIONS

if TYPE_CHECKING:
    from workbench.worlds.world import World


@dataclass(frozen=True)
class Hop:
    """One step of a question's chain: `entity`'s `relation` is `answer`, stated in `passage_id`."""

    entity: str
    relation: str
    phrase: str
    answer: str
    passage_id: str

    @property
    def query(self) -> str:
        """What a scripted solver searches for this hop: `"<entity> <phrase>"`."""
        return f"{self.entity} {self.phrase}"


@dataclass
class Question:
    id: str
    question: str
    golden_answers: list[str]
    hops: list[Hop]
    split: str
    start: int  # entity id the chain starts from
    relations: list[str] = field(default_factory=list)

    @property
    def support(self) -> list[str]:
        return [h.passage_id for h in self.hops]

    def metadata(self, seed: int) -> dict[str, Any]:
        return {
            "hops": len(self.hops),
            "support": self.support,
            "split": self.split,
            "world_seed": seed,
            "source": "world",
            "chain": [[h.entity, h.relation, h.phrase] for h in self.hops],
        }

    def to_task(self, seed: int) -> Task:
        return Task(
            id=self.id, question=self.question, golden_answers=list(self.golden_answers), metadata=self.metadata(seed)
        )

    def to_row(self, seed: int) -> dict[str, Any]:
        """A Search-R1 QA row: `id, question, golden_answers, metadata`."""
        return {
            "id": self.id,
            "question": self.question,
            "golden_answers": list(self.golden_answers),
            "metadata": self.metadata(seed),
        }


def build_question(world: World, qid: str, start: int, relations: list[str], split: str) -> Question:
    """Resolve a relation chain from entity `start` into a `Question` with hops and aliases."""
    hops, current = [], world.entities[start]
    for rel in relations:
        value = world.lookup(current.id, rel)
        hops.append(Hop(current.name, rel, RELATIONS[rel].phrase, value, str(current.id)))
        target = RELATIONS[rel].target
        if target is not None:
            current = world.entities[current.rels[rel]]
    np = world.entities[start].name
    for rel in relations:
        np = f"the {RELATIONS[rel].phrase} of {np}"
    final = RELATIONS[relations[-1]]
    wh = "Who" if final.target == "person" else "What"
    answers = [hops[-1].answer]
    if final.target == "person" and current.attrs.get("surname"):
        answers.append(current.attrs["surname"])
    return Question(qid, f"{wh} is {np}?", answers, hops, split, start, list(relations))


def _walk(world: World, rng: random.Random, hops: int) -> tuple[int, list[str]] | None:
    """A random chain of `hops` relations that never revisits an entity, or None."""
    start = rng.randrange(len(world.entities))
    current, seen, rels = world.entities[start], {start}, []
    for i in range(hops):
        options = [
            r
            for r in world.relations_of(current.type)
            if (i == hops - 1 or r.target is not None) and (r.target is None or current.rels[r.name] not in seen)
        ]
        if not options:
            return None
        rel = rng.choice(options)
        rels.append(rel.name)
        if rel.target is not None:
            current = world.entities[current.rels[rel.name]]
            seen.add(current.id)
    return start, rels


QUESTION_SEED_STRIDE, QUESTION_SEED_OFFSET = 1_000_003, 17
"""The questions of a world seeded s are drawn from s * QUESTION_SEED_STRIDE + QUESTION_SEED_OFFSET: a stream apart
from the one that builds the world (seeded with s itself)."""


def generate_questions(
    world: World, n_train: int, n_test: int, hop_weights: dict[int, float], seed: int
) -> list[Question]:
    """Sample unique questions into train/test by the held-out rule above (deterministic)."""
    rng = random.Random(seed * QUESTION_SEED_STRIDE + QUESTION_SEED_OFFSET)
    want = {"train": n_train, "test": n_test}
    got = {"train": 0, "test": 0}
    hop_values, weights = list(hop_weights), list(hop_weights.values())
    seen: set[tuple] = set()
    out: list[Question] = []
    attempts = 0
    while (got["train"] < want["train"] or got["test"] < want["test"]) and attempts < 60 * (n_train + n_test) + 1000:
        attempts += 1
        walk = _walk(world, rng, rng.choices(hop_values, weights)[0])
        if walk is None or (key := (walk[0], tuple(walk[1]))) in seen:
            continue
        subjects = world.chain_subjects(*walk)
        if world.heldout[subjects[-1]]:
            split = "test"
        elif not any(world.heldout[s] for s in subjects):
            split = "train"
        else:
            continue
        if got[split] >= want[split]:
            continue
        seen.add(key)
        got[split] += 1
        out.append(build_question(world, f"w{seed}-{split}-{got[split] - 1}", *walk, split))
    return out
