import json
import re

import pytest

from workbench.errors import ConfigError
from workbench.trajectory import Task
from workbench.worlds import World, iter_corpus, load_qa, make_world, split_title


@pytest.fixture(scope="module")
def world() -> World:
    return make_world(seed=3, size="small")


def test_same_seed_same_world_different_seed_different_world():
    a, b, c = make_world(7, "tiny"), make_world(7, "tiny"), make_world(8, "tiny")
    assert a.corpus() == b.corpus() and a.qa_rows("train") == b.qa_rows("train")
    assert a.qa_rows("test") == b.qa_rows("test")
    assert a.corpus() != c.corpus()


@pytest.mark.parametrize("size,n", [("tiny", 100), ("small", 300), (1234, 1234)])
def test_sizes(size, n):
    w = make_world(0, size)
    assert len(w.corpus()) == n and len(w) == n
    assert w.split("train") and w.split("test")


def test_bad_size_and_hops_name_the_fix():
    with pytest.raises(ConfigError, match="tiny"):
        make_world(0, "huge")
    with pytest.raises(ConfigError, match="hop_weights"):
        World.generate(0, 100, hop_weights={5: 1.0})


def test_passages_are_search_r1_rows_of_two_to_four_sentences(world):
    titles = set()
    for i, row in enumerate(world.corpus()):
        assert row["id"] == str(i)
        assert row["contents"].startswith('"') and "\n" in row["contents"]
        title, text = split_title(row["contents"])
        titles.add(title)
        assert title == world.entities[i].name
        assert 2 <= len(re.findall(r"\.(\s|$)", text)) <= 4, text
    assert len(titles) == len(world)  # names are unique


def test_every_hop_is_stated_in_its_supporting_passage(world):
    assert {len(q.hops) for q in world.questions} == {1, 2, 3, 4}
    for q in world.questions:
        assert q.golden_answers[0] == q.hops[-1].answer
        assert q.question.endswith(q.hops[0].entity + "?")
        for i, hop in enumerate(q.hops):
            title, text = split_title(world.passage(hop.passage_id)["contents"])
            assert title == hop.entity and hop.answer in text
            if i + 1 < len(q.hops):
                assert q.hops[i + 1].entity == hop.answer  # the chain is connected
        assert q.golden_answers[0].lower() not in q.question.lower()


def test_no_test_answer_fact_is_used_by_any_train_question(world):
    train_support = {pid for q in world.split("train") for pid in q.support}
    for q in world.split("test"):
        assert q.support[-1] not in train_support
    train_q = {q.question for q in world.split("train")}
    assert not train_q & {q.question for q in world.split("test")}


def test_tasks_and_rows_carry_the_chain(world):
    task = world.tasks("test")[0]
    assert isinstance(task, Task)
    meta = task.metadata
    assert meta["split"] == "test" and meta["world_seed"] == 3 and meta["hops"] == len(meta["support"])
    assert [c[0] for c in meta["chain"]] == [h.entity for h in world.chain(task)]
    row = world.qa_rows("train")[0]
    assert set(row) == {"id", "question", "golden_answers", "metadata"}


def test_person_answers_accept_the_surname(world):
    q = next(q for q in world.questions if q.relations[-1] in ("directed_by", "founded_by"))
    assert q.question.startswith("Who is")
    assert q.golden_answers[1] == q.golden_answers[0].split()[-1]


def test_lookup_and_chain_for_a_scripted_solver(world):
    q = next(q for q in world.questions if len(q.hops) == 3)
    entity = q.hops[0].entity
    for hop in world.chain(q.id):
        assert hop.query == f"{entity} {hop.phrase}"
        entity = world.lookup(entity, hop.relation)
        assert entity == hop.answer
    assert entity == q.golden_answers[0]
    with pytest.raises(KeyError, match="unknown relation"):
        world.lookup(q.hops[0].entity, "married_to")
    with pytest.raises(KeyError):
        world.chain("nope")


def test_save_load_round_trip(world, tmp_path):
    world.save(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"corpus.jsonl", "qa_train.jsonl", "qa_test.jsonl", "world.json"}
    back = World.load(tmp_path)
    assert back.corpus() == world.corpus()
    assert back.qa_rows("train") == world.qa_rows("train")
    assert [p.to_row() for p in iter_corpus(tmp_path / "corpus.jsonl")] == world.corpus()
    tasks = load_qa(tmp_path / "qa_test.jsonl")
    assert [t.to_dict() if hasattr(t, "to_dict") else t.__dict__ for t in tasks] == [
        t.__dict__ for t in world.tasks("test")
    ]
    (tmp_path / "world.json").write_text(json.dumps({"seed": 1}))
    with pytest.raises(ConfigError, match=r"World\.generate"):
        World.load(tmp_path)


@pytest.mark.slow
def test_large_world_generates(tmp_path):
    w = make_world(0, "large")
    assert len(w) == 100_000 and len(w.split("train")) == 20_000
