"""Synthetic knowledge worlds and Search-R1/FlashRAG corpus and QA readers.

from workbench.worlds import make_world, load_qa
world = make_world(seed=0, size="small")
world.save("data/world0")              # corpus.jsonl, qa_train.jsonl, qa_test.jsonl, world.json
tasks = load_qa("data/world0/qa_test.jsonl")
"""

from workbench.worlds.datasets import iter_corpus, iter_qa, load_corpus, load_qa, split_title
from workbench.worlds.world import World, make_world

__all__ = [
    "World",
    "iter_corpus",
    "iter_qa",
    "load_corpus",
    "load_qa",
    "make_world",
    "split_title",
]
