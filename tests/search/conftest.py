"""Fixtures for the search tests: a small synthetic world built here (hermetic, seeded)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.search import BM25Retriever, Corpus, DenseRetriever, Encoder

SYL = [
    "var",
    "nol",
    "kel",
    "dra",
    "mor",
    "zan",
    "thi",
    "bel",
    "qua",
    "rus",
    "lin",
    "tor",
    "pex",
    "gal",
    "ven",
    "sho",
    "mir",
    "dul",
    "kra",
    "obi",
    "fen",
    "wex",
    "yul",
    "har",
    "sim",
    "ota",
    "jor",
    "cle",
    "ivo",
    "bra",
]
KINDS = ["city", "river", "company", "mountain", "festival", "library"]
FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kamal", "Lena"]
LAST = ["Brell", "Castel", "Dunmore", "Esk", "Falk", "Grieve", "Holt", "Ingram", "Jessup", "Kovar"]


def make_world(n: int = 300, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """`n` passages about made-up entities and one 1-hop question per passage."""
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < n:
        names.add("".join(rng.choice(SYL) for _ in range(rng.randint(2, 3))).capitalize())
    rows, questions = [], []
    for i, name in enumerate(sorted(names)):
        kind = rng.choice(KINDS)
        founder = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        year = rng.randint(1100, 1990)
        region = "".join(rng.choice(SYL) for _ in range(2)).capitalize()
        text = (
            f"{name} is a {kind} in the region of {region}. {name} was founded in {year} by {founder}, "
            f"and the {kind} is known locally for its {rng.choice(['copper', 'glass', 'wool', 'salt'])}."
        )
        rows.append({"id": str(i), "contents": f'"{name}"\n{text}'})
        questions.append({"question": f"Who founded the {kind} {name}?", "answer": founder, "support": [str(i)]})
    return rows, questions


def one_hop_world(max_questions: int = 150) -> tuple[list[dict], list[dict]]:
    """The project's synthetic world (workbench.worlds, 300 passages) and its 1-hop questions;
    the local generator above when that package is not importable."""
    try:
        from workbench.worlds import make_world as make_synthetic_world
    except ImportError:
        return make_world()
    w = make_synthetic_world(seed=0, size="small")
    tasks = [t for t in w.tasks("train") + w.tasks("test") if t.metadata["hops"] == 1]
    questions = [
        {"question": t.question, "answer": t.golden_answers[0], "support": t.metadata["support"]}
        for t in tasks[:max_questions]
    ]
    return w.corpus(), questions


@pytest.fixture(scope="session")
def world() -> tuple[Corpus, list[dict]]:
    rows, questions = one_hop_world()
    return Corpus.from_rows(rows), questions


@pytest.fixture(scope="session")
def encoder() -> Encoder:
    return Encoder()


@pytest.fixture(scope="session")
def dense(world, encoder) -> DenseRetriever:
    return DenseRetriever.build(world[0], encoder, show_progress=False)


@pytest.fixture(scope="session")
def bm25(world) -> BM25Retriever:
    return BM25Retriever.build(world[0], show_progress=False)


def _recall_at(retriever, questions, k: int = 3) -> float:
    """Fraction of questions with a supporting passage among the top k."""
    results = retriever.retrieve([q["question"] for q in questions], top_k=k)
    found = sum(bool({h.id for h in hits} & set(q["support"])) for hits, q in zip(results, questions, strict=True))
    return found / len(questions)


@pytest.fixture(scope="session")
def recall_at():
    return _recall_at


def _clustered(n: int, d: int = 64, seed: int = 0) -> np.ndarray:
    """Unit vectors shaped like sentence embeddings: 40 topics, spread within an 8-d subspace."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, d))
    basis = rng.standard_normal((8, d))
    x = centres[rng.integers(0, 40, n)] + 0.3 * rng.standard_normal((n, 8)) @ basis + 0.02 * rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="session")
def clustered():
    return _clustered
