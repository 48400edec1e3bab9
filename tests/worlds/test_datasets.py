import gzip
import json

import pytest

from workbench.errors import ConfigError
from workbench.worlds import iter_corpus, iter_qa, load_corpus, load_qa, split_title


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_split_title():
    assert split_title('"Paris"\nParis is the capital.') == ("Paris", "Paris is the capital.")
    assert split_title('"Multi"\nline one\nline two') == ("Multi", "line one\nline two")
    assert split_title("no title here") == ("", "no title here")


def test_corpus_contents_title_text_and_missing_ids(tmp_path):
    p = _write(
        tmp_path / "c.jsonl",
        [
            json.dumps({"id": "a", "contents": '"Alpha"\nFirst.'}),
            "",
            json.dumps({"title": "Beta", "text": "Second."}),
        ],
    )
    rows = list(load_corpus(p))
    assert [(r.id, r.title, r.text) for r in rows] == [("a", "Alpha", "First."), ("1", "Beta", "Second.")]
    assert rows[1].to_row() == {"id": "1", "contents": '"Beta"\nSecond.'}


def test_corpus_is_streamed_and_gz_works(tmp_path):
    p = tmp_path / "c.jsonl.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(json.dumps({"id": "0", "contents": '"T"\nx'}) + "\n{broken\n")
    it = iter_corpus(p)
    assert next(it).title == "T"  # the bad line is not read until asked for
    with pytest.raises(ConfigError, match=r"c\.jsonl\.gz:2: invalid JSON"):
        next(it)


@pytest.mark.parametrize(
    "line,problem",
    [
        ("[1, 2]", "expected a JSON object"),
        ('{"id": "x"}', "neither 'contents' nor 'text'"),
        ('{"id": "x", "contents": 5}', "neither 'contents' nor 'text'"),
    ],
)
def test_corpus_bad_rows_name_file_and_line(tmp_path, line, problem):
    p = _write(tmp_path / "c.jsonl", [json.dumps({"contents": '"A"\nb'}), line])
    with pytest.raises(ConfigError, match=rf"c\.jsonl:2: .*{problem}"):
        list(iter_corpus(p))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        list(iter_corpus(tmp_path / "nope.jsonl"))
    for name in ("nope.jsonl", "nope.parquet"):  # the one task reader: agent, train, evolve and eval use it
        with pytest.raises(ConfigError, match="is not a file; point it at a QA file"):
            load_qa(tmp_path / name)


def test_qa_rows_become_tasks(tmp_path):
    p = _write(
        tmp_path / "qa.jsonl",
        [
            json.dumps(
                {
                    "id": "q1",
                    "question": "Who?",
                    "golden_answers": ["A", "B"],
                    "metadata": {"hops": 2},
                    "data_source": "nq",
                }
            ),
            json.dumps({"question": "When?", "golden_answers": 1987}),
            json.dumps({"question": "Where?", "reward_model": {"ground_truth": {"target": ["X"]}}}),
        ],
    )
    t1, t2, t3 = load_qa(p)
    assert (t1.id, t1.golden_answers, t1.metadata["hops"], t1.metadata["data_source"]) == ("q1", ["A", "B"], 2, "nq")
    assert t2.id == "qa-2" and t2.golden_answers == ["1987"]
    assert t3.golden_answers == ["X"]


@pytest.mark.parametrize(
    "row,problem",
    [
        ({"golden_answers": ["a"]}, "no 'question'"),
        ({"question": "Q?"}, "no 'golden_answers'"),
        ({"question": "Q?", "golden_answers": []}, "non-empty list"),
        ({"question": "Q?", "golden_answers": ["a"], "metadata": [1]}, "'metadata' must be an object"),
    ],
)
def test_qa_bad_rows_name_file_and_line(tmp_path, row, problem):
    p = _write(tmp_path / "qa.jsonl", [json.dumps({"question": "ok", "golden_answers": ["x"]}), json.dumps(row)])
    it = iter_qa(p)
    assert next(it).question == "ok"
    with pytest.raises(ConfigError, match=rf"qa\.jsonl:2: .*{problem}"):
        next(it)


def test_qa_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "test.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "7", "question": "Q?", "golden_answers": ["a"]}]), p)
    [t] = load_qa(p)
    assert (t.id, t.question, t.golden_answers) == ("7", "Q?", ["a"])
