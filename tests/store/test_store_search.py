"""Full-text search: words in any order over question, think, code, output and answer; kept in step
with writes; built for stores written before it; never raises on any text."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.safetext import safe_text
from workbench.store import STORE_SCHEMA_VERSION, Store
from workbench.store._search import match_expression
from workbench.trajectory import Step, Task, Trajectory


def traj(i: int, *, question: str = "", think: str = "", code: str = "", output: str = "", answer: str = ""):
    step = Step(index=0, raw=think, think=think or None, code=code or None, observation_text=output)
    return Trajectory(task=Task(id=f"t{i}", question=question), id=f"traj-{i}", steps=[step], final_answer=answer)


@pytest.fixture
def searchable(tmp_path):
    with Store(tmp_path / "run", synchronous="NORMAL") as store:
        store.write_many(
            [
                traj(0, question="What is the capital of Teivrei?", answer="Molvad"),
                traj(1, think="the museum was founded by Ardo", code="print(search('Ardo museum'))"),
                traj(2, output="Doc 3: Teivrei borders Kasland.", answer="Kasland"),
                traj(3, code="x = notepad['capital']  # -> Teivrei"),
            ]
        )
        yield store


def ids(store: Store, text: str, **filters) -> list[str]:
    return store.query(search=text, **filters)["id"].tolist()


def test_words_in_any_order_across_fields(searchable):
    assert ids(searchable, "capital Teivrei") == ["traj-0", "traj-3"]
    assert ids(searchable, "TEIVREI capital") == ["traj-0", "traj-3"]
    assert ids(searchable, "museum ardo") == ["traj-1"]  # think and code
    assert ids(searchable, "kasland") == ["traj-2"]  # output and answer
    assert ids(searchable, "teiv") == ["traj-0", "traj-2", "traj-3"]  # words match as prefixes
    assert ids(searchable, "traj-1") == []  # ids are not words: "1" would match every id with a 1
    assert ids(searchable, "traj-0-and") == []  # and 8 characters are no id's start here
    assert ids(searchable, "->") == ["traj-3"]  # a query without words matches its symbols
    assert ids(searchable, "capital nowhere") == []


def test_an_id_is_found_by_its_first_eight_characters(searchable):
    long = traj(5, think="nothing")
    long.id = "3fa2b7c1d4e5"
    searchable.write(long)
    assert ids(searchable, "3fa2b7c1") == ids(searchable, " 3fa2b7c1d4e5 ") == ["3fa2b7c1d4e5"]
    assert ids(searchable, "3fa2b7c") == []  # shorter: a word prefix, and no word starts so


def test_search_combines_with_filters_and_blank_is_no_filter(searchable):
    assert ids(searchable, "teivrei", ids=["traj-2", "traj-3"]) == ["traj-2", "traj-3"]
    assert len(searchable.query(search="  ")) == 4
    assert searchable.columns(("id",), search="molvad") == {"id": ["traj-0"]}
    assert [t.id for t in searchable.iter_trajectories(search="kasland")] == ["traj-2"]


def test_rewriting_a_trajectory_replaces_its_index_entry(searchable):
    searchable.write(traj(2, output="nothing left"))
    assert ids(searchable, "kasland") == []
    assert ids(searchable, "nothing left") == ["traj-2"]


def make_v1(run) -> None:
    """Turn a store into one as workbench wrote it before the index existed."""
    conn = sqlite3.connect(run / "trajectories.sqlite")
    conn.execute("DROP TABLE trajectories_fts")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_store_without_index_is_migrated_on_open(searchable):
    run = searchable.run_dir
    searchable.close()
    make_v1(run)
    with Store.open_readonly(run) as ro:  # read-only: indexed in memory, the file left as it is
        assert ids(ro, "capital teivrei") == ["traj-0", "traj-3"]
    conn = sqlite3.connect(run / "trajectories.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    conn.close()
    with Store(run) as store:  # read-write: built in the file, and the version moves on
        assert ids(store, "capital teivrei") == ["traj-0", "traj-3"]
        version = store._conn().execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(STORE_SCHEMA_VERSION),)
        store.write(traj(9, think="written after the migration"))
        assert ids(store, "migration") == ["traj-9"]


def test_query_text_is_never_fts_syntax():
    assert (
        match_expression('"capital" NEAR(a b) -x AND y*')
        == '"capital"* AND "near"* AND "a"* AND "b"* AND "x"* AND "and"* AND "y"*'
    )
    assert match_expression("*") == '"\u00b72a"'
    assert match_expression(" \n\t") is None


nasty = st.sampled_from(['"', "*", "NEAR", "-", "AND", "OR", "NOT", "(", ")", ":", "^", "\x00", "\ud800", "'", " "])
any_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"]), nasty), max_size=30).map("".join)


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("fuzz"), synchronous="NORMAL") as store:
        store.write(traj(-1, question="a bystander that most queries miss"))
        yield store


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=any_text, field=st.sampled_from(["question", "think", "code", "output", "answer"]), n=st.integers(0, 10**9))
def test_arbitrary_text_is_found_and_never_raises(fuzz_store, text, field, n):
    fuzz_store.write(traj(n, **{field: text}))
    found = ids(fuzz_store, text)  # never raises, whatever the text
    if safe_text(text).strip():
        assert f"traj-{n}" in found
    assert ids(fuzz_store, text + " zzqqxx") == [] or "zzqqxx" in text.lower()


def test_a_megabyte_of_output_is_indexed_whole(searchable):
    searchable.write(traj(7, output="lorem ipsum " * 90_000 + "needle at the very end\x00"))
    assert ids(searchable, "needle lorem") == ["traj-7"] and ids(searchable, "\x00") == ["traj-7"]
