"""Readers for Search-R1 / FlashRAG corpora and QA files (JSONL, optionally gzipped; QA also .parquet).

    from workbench.worlds import iter_corpus, load_qa, split_title
    for passage in iter_corpus("wiki-18.jsonl"):       # streams; never loads the whole file
        passage.id, passage.title, passage.text
    tasks = load_qa("nq_test.jsonl")                   # list[Task]; iter_qa(...) streams
    split_title('"Paris"\\nParis is ...')               # ('Paris', 'Paris is ...')

A corpus row is `{"id", "contents"}` with the title on the first line in quotes, or
`{"id", "title", "text"}`, either with an optional `url` (the page the passage comes from). A missing
id becomes the row number (Search-R1 looks rows up by FAISS row index, so row order is the id space).
A QA row needs `question` and `golden_answers` (a list or a string; `answers`, `answer` and
Search-R1's `reward_model.ground_truth.target` are accepted too). A malformed line raises
`ConfigError` naming the file, the line and the problem.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from workbench.errors import ConfigError
from workbench.passages import split_contents
from workbench.trajectory import Task


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    url: str = ""

    @property
    def contents(self) -> str:
        return f'"{self.title}"\n{self.text}'

    def to_row(self) -> dict[str, str]:
        row = {"id": self.id, "contents": self.contents}
        if self.url:
            row["url"] = self.url
        return row


def split_title(contents: str) -> tuple[str, str]:
    """`'"Title"\\ntext'` → `("Title", "text")`; without a newline the title is empty."""
    if "\n" not in contents:
        return "", contents.strip()
    title, text = split_contents(contents)
    return title, text.strip()


def _open(path: Path) -> IO[str]:
    if not path.is_file():
        raise ConfigError(f"{path}: no such file; pass the path of a .jsonl (or .jsonl.gz) file")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def _rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad JSON raises ConfigError."""
    p = Path(path)
    with _open(p) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{p}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno}); each line must be one JSON object"
                ) from None
            if not isinstance(row, dict):
                raise ConfigError(f"{p}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield lineno, row


def iter_corpus(path: str | Path) -> Iterator[Passage]:
    """Stream the passages of a Search-R1/FlashRAG corpus file."""
    for index, (lineno, row) in enumerate(_rows(path)):
        pid = str(row.get("id", index))
        if isinstance(row.get("contents"), str):
            title, text = split_title(row["contents"])
        elif isinstance(row.get("text"), str):
            title, text = str(row.get("title", "")), row["text"]
        else:
            raise ConfigError(
                f"{path}:{lineno}: corpus row has neither 'contents' nor 'text' "
                '(strings); write {"id": ..., "contents": "\\"Title\\"\\ntext"}'
            )
        url = row.get("url")
        yield Passage(pid, title, text, url if isinstance(url, str) else "")


load_corpus = iter_corpus  # streams too; wrap in list() for a small corpus
"""The same as `iter_corpus`: streams a corpus file's rows."""


def _answers(row: dict[str, Any]) -> Any:
    for key in ("golden_answers", "answers", "answer"):
        if key in row:
            return row[key]
    gt = (row.get("reward_model") or {}).get("ground_truth") if isinstance(row.get("reward_model"), dict) else None
    if isinstance(gt, dict) and "target" in gt:
        return gt["target"]
    return None


def _task(row: dict[str, Any], where: str, default_id: str) -> Task:
    if not isinstance(row.get("question"), str) or not row["question"].strip():
        raise ConfigError(f"{where}: QA row has no 'question' string; each row needs question and golden_answers")
    answers = _answers(row)
    if answers is None:
        raise ConfigError(f"{where}: QA row has no 'golden_answers'; add a list of answer strings")
    if isinstance(answers, (str, int, float)):
        answers = [answers]
    if not isinstance(answers, (list, tuple)) and hasattr(answers, "tolist"):
        answers = answers.tolist()  # numpy arrays from parquet
    if not isinstance(answers, (list, tuple)) or not answers:
        raise ConfigError(f"{where}: 'golden_answers' must be a non-empty list of strings, got {answers!r}")
    meta = row.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise ConfigError(f"{where}: 'metadata' must be an object, got {type(meta).__name__}")
    row = {**row, "golden_answers": [str(a) for a in answers], "id": str(row.get("id", default_id))}
    for key in ("answers", "answer"):
        row.pop(key, None)
    return Task.from_dict(row)


def iter_qa(path: str | Path) -> Iterator[Task]:
    """Stream `Task`s from a QA file (.jsonl, .jsonl.gz or .parquet)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{str(p)!r} is not a file; point it at a QA file (.jsonl, .jsonl.gz or .parquet)")
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq  # lazy: only parquet users pay the import

        for i, row in enumerate(pq.read_table(p).to_pylist()):
            yield _task(row, f"{p}:row {i}", f"{p.stem}-{i}")
        return
    for lineno, row in _rows(p):
        yield _task(row, f"{p}:{lineno}", f"{p.stem}-{lineno}")


def load_qa(path: str | Path) -> list[Task]:
    """All `Task`s of a QA file; see `iter_qa` to stream a large one."""
    return list(iter_qa(path))
