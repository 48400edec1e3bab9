"""A seeded fictional knowledge world: entities, passages (Search-R1 corpus) and multi-hop QA.

    from workbench.worlds import World, make_world
    world = make_world(seed=0, size="small")          # ~300 passages, 1–4 hop questions
    world.corpus()[0]        # {"id": "0", "contents": "\"Draven\"\nDraven is a country. ...",
                             #  "url": "https://world0.wiki.test/wiki/Draven"}
    task = world.tasks("train")[0]                     # workbench.trajectory.Task
    for hop in world.chain(task.id):                   # what a scripted solver searches, in order
        print(hop.query, "->", hop.answer)             # "Vel Orun director -> Tamira Kolvesh"
    world.lookup("Vel Orun", "directed_by")            # "Tamira Kolvesh"
    world.save("data/world0"); World.load("data/world0")

Same seed and size, same world, byte for byte.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any
from urllib.parse import quote

from workbench.errors import ConfigError
from workbench.trajectory import Task
from workbench.worlds.names import NameGenerator
from workbench.worlds.questions import Hop, Question, build_question, generate_questions
from workbench.worlds.schema import (
    GENRES,
    OCCUPATIONS,
    ORG_KINDS,
    RELATIONS,
    Entity,
    Relation,
    fact_value,
    render_passage,
)

# passages, train questions, test questions
SIZES: dict[str, tuple[int, int, int]] = {
    "tiny": (100, 200, 50),
    "small": (300, 1000, 200),
    "medium": (10_000, 5000, 1000),
    "large": (100_000, 20_000, 2000),
}
DEFAULT_HOP_WEIGHTS = {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0}  # Dr. Zero's hop ratio


class World:
    """Entities + questions. Build with `World.generate` / `make_world`, or `World.load`."""

    def __init__(self, seed: int, entities: list[Entity], heldout: list[bool], params: dict[str, Any]) -> None:
        self.seed = seed
        self.entities = entities
        self.heldout = heldout
        self.params = params
        self.questions: list[Question] = []
        self._by_name = {e.name.lower(): e for e in entities}
        self._names = [e.name for e in entities]
        self._by_qid: dict[str, Question] = {}

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def generate(
        cls,
        seed: int,
        n_entities: int = 300,
        *,
        n_train: int | None = None,
        n_test: int | None = None,
        hop_weights: dict[int, float] | None = None,
        heldout_fraction: float = 0.15,
    ) -> World:
        """A world of `n_entities` passages (one per entity) and its train/test questions."""
        if not 20 <= n_entities <= 1_000_000:
            raise ConfigError(f"n_entities={n_entities}: use 20 to 1,000,000 passages")
        hop_weights = dict(hop_weights or DEFAULT_HOP_WEIGHTS)
        if not hop_weights or any(h not in (1, 2, 3, 4) or w < 0 for h, w in hop_weights.items()):
            raise ConfigError(f"hop_weights={hop_weights}: keys must be 1–4, weights >= 0")
        n_train = min(3 * n_entities, 20_000) if n_train is None else n_train
        n_test = max(20, n_train // 5) if n_test is None else n_test
        rng = random.Random(seed)
        entities = _make_entities(rng, n_entities)
        heldout = [rng.random() < heldout_fraction for _ in entities]
        params = {
            "n_entities": n_entities,
            "n_train": n_train,
            "n_test": n_test,
            "hop_weights": {str(k): v for k, v in hop_weights.items()},
            "heldout_fraction": heldout_fraction,
        }
        world = cls(seed, entities, heldout, params)
        world._set_questions(generate_questions(world, n_train, n_test, hop_weights, seed))
        return world

    def _set_questions(self, questions: list[Question]) -> None:
        self.questions = questions
        self._by_qid = {q.id: q for q in questions}

    # -- structured access (for scripted solvers, tests, notebooks) ----------------------------
    def entity(self, key: int | str) -> Entity:
        """An entity by id or (case-insensitive) name."""
        if isinstance(key, int):
            return self.entities[key]
        try:
            return self._by_name[key.lower()]
        except KeyError:
            raise KeyError(f"no entity named {key!r} in world {self.seed}") from None

    def lookup(self, entity: int | str, relation: str) -> str:
        """The object of one fact as a string: `lookup("Vel Orun", "directed_by")`."""
        if relation not in RELATIONS:
            raise KeyError(f"unknown relation {relation!r}; known: {', '.join(RELATIONS)}")
        return fact_value(self.entity(entity), relation, self._names)

    def relations_of(self, entity_type: str) -> list[Relation]:
        return [r for r in RELATIONS.values() if r.subject == entity_type]

    def chain(self, question: str | Task | Question) -> list[Hop]:
        """The hops of a question (by id, Task or Question), in the order a solver needs them."""
        qid = question if isinstance(question, str) else question.id
        try:
            return list(self._by_qid[qid].hops)
        except KeyError:
            raise KeyError(f"no question {qid!r} in world {self.seed}") from None

    def chain_subjects(self, start: int, relations: list[str]) -> list[int]:
        """Entity ids whose passages support each hop of the chain."""
        out, current = [], self.entities[start]
        for rel in relations:
            out.append(current.id)
            if RELATIONS[rel].target is not None:
                current = self.entities[current.rels[rel]]
        return out

    def passage(self, passage_id: str | int) -> dict[str, str]:
        e = self.entities[int(passage_id)]
        return {
            "id": str(e.id),
            "contents": f'"{e.name}"\n{render_passage(e, self._names)}',
            "url": self.page_url(e.id),
        }

    @property
    def site_base(self) -> str:
        """The origin of this world's browsable site (a reserved .test name: never on the web)."""
        return f"https://world{self.seed}.wiki.test"

    def page_url(self, entity: int | str) -> str:
        """The URL of an entity's page on the world's site (`workbench.worlds.site.world_site`)."""
        name = self.entity(entity).name
        return f"{self.site_base}/wiki/{quote(name.replace(' ', '_'), safe='')}"

    # -- views --------------------------------------------------------------------------------
    def corpus(self) -> list[dict[str, str]]:
        """Search-R1 corpus rows `{"id", "contents", "url"}`, row order = id."""
        return [self.passage(i) for i in range(len(self.entities))]

    def split(self, split: str) -> list[Question]:
        if split not in ("train", "test"):
            raise ConfigError(f"split={split!r}: use 'train' or 'test'")
        return [q for q in self.questions if q.split == split]

    def tasks(self, split: str = "train") -> list[Task]:
        return [q.to_task(self.seed) for q in self.split(split)]

    def qa_rows(self, split: str = "train") -> list[dict[str, Any]]:
        return [q.to_row(self.seed) for q in self.split(split)]

    def __len__(self) -> int:
        return len(self.entities)

    def __repr__(self) -> str:
        return (
            f"World(seed={self.seed}, passages={len(self.entities)}, "
            f"train={len(self.split('train'))}, test={len(self.split('test'))})"
        )

    # -- persistence --------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write corpus.jsonl, qa_train.jsonl, qa_test.jsonl and world.json into `directory`."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        _write_jsonl(d / "corpus.jsonl", self.corpus())
        _write_jsonl(d / "qa_train.jsonl", self.qa_rows("train"))
        _write_jsonl(d / "qa_test.jsonl", self.qa_rows("test"))
        meta = {
            "format": 1,
            "seed": self.seed,
            "params": self.params,
            "entities": [e.to_dict() for e in self.entities],
            "heldout": [i for i, h in enumerate(self.heldout) if h],
            "questions": [
                {"id": q.id, "start": q.start, "relations": q.relations, "split": q.split} for q in self.questions
            ],
        }
        (d / "world.json").write_text(json.dumps(meta), encoding="utf-8")
        return d

    @classmethod
    def load(cls, directory: str | Path) -> World:
        path = Path(directory) / "world.json"
        if not path.is_file():
            raise ConfigError(f"{path} not found; write a world with World.save(directory) first")
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            entities = [Entity(**e) for e in meta["entities"]]
            held = set(meta["heldout"])
            world = cls(int(meta["seed"]), entities, [i in held for i in range(len(entities))], dict(meta["params"]))
            world._set_questions(
                [build_question(world, q["id"], q["start"], q["relations"], q["split"]) for q in meta["questions"]]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{path} is not a workbench world file ({exc!r}); regenerate it with World.generate(...).save(dir)"
            ) from exc
        return world


def make_world(seed: int = 0, size: str | int = "small", **kwargs: Any) -> World:
    """A world by preset ("tiny" 100, "small" 300, "medium" 10k, "large" 100k passages) or count."""
    if isinstance(size, int):
        return World.generate(seed, size, **kwargs)
    if size not in SIZES:
        raise ConfigError(f"size={size!r}: use one of {', '.join(SIZES)} or a passage count")
    n, n_train, n_test = SIZES[size]
    kwargs.setdefault("n_train", n_train)
    kwargs.setdefault("n_test", n_test)
    return World.generate(seed, n, **kwargs)


def _make_entities(rng: random.Random, n: int) -> list[Entity]:
    """Countries, cities, people, films and organisations in fixed proportions, all linked."""
    gen = NameGenerator(rng)
    n_country = max(2, n // 40)
    n_city = max(n_country, n // 5)
    n_film, n_org = n // 5, n * 3 // 20
    n_person = n - n_country - n_city - n_film - n_org
    ents: list[Entity] = []

    def add(type_: str, name: str, **attrs: Any) -> Entity:
        ents.append(Entity(len(ents), type_, name, attrs, {}))
        return ents[-1]

    countries = [add("country", gen.unique(rng.choice((2, 3)))) for _ in range(n_country)]
    cities = [add("city", gen.unique(rng.choice((2, 2, 3))), population=rng.randrange(5, 900)) for _ in range(n_city)]
    for i, city in enumerate(cities):  # every country gets at least one city
        country = countries[i] if i < n_country else rng.choice(countries)
        city.rels["located_in"] = country.id
        if i < n_country:
            city.attrs["is_capital"] = True
            country.rels["capital"] = city.id
    people = []
    for _ in range(n_person):
        full, surname = gen.person()
        p = add(
            "person", full, surname=surname, occupation=rng.choice(OCCUPATIONS), birth_year=rng.randrange(1850, 1990)
        )
        p.rels["born_in"] = rng.choice(cities).id
        people.append(p)
    for _ in range(n_film):
        director = rng.choice(people)
        f = add(
            "film",
            _film_title(gen),
            genre=rng.choice(GENRES),
            release_year=min(2024, director.attrs["birth_year"] + rng.randrange(22, 60)),
        )
        f.rels["directed_by"] = director.id
    for _ in range(n_org):
        founder = rng.choice(people)
        o = add(
            "organisation",
            f"{gen.unique(2)} {rng.choice(ORG_KINDS)}",
            founding_year=min(2024, founder.attrs["birth_year"] + rng.randrange(20, 55)),
        )
        o.rels["founded_by"] = founder.id
        o.rels["headquartered_in"] = rng.choice(cities).id
    return ents


def _film_title(gen: NameGenerator) -> str:
    while True:  # two words, unique as a whole among all names
        title = f"{gen.unique(2)} {gen.word(gen.rng.choice((1, 2)))}"
        if title.lower() not in gen.used:
            gen.used.add(title.lower())
            return title


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
