"""A passage corpus in Search-R1's JSONL format, addressed by row index.

Each line is `{"id": "0", "contents": "\\"Title\\"\\ntext"}` (or `{"id", "title", "text"}`, which
is converted). Rows keep any extra keys (e.g. ASearcher's `url`). Index row *i* is corpus row *i*:
the JSONL order is the id space, exactly as in Search-R1.

    corpus = Corpus.from_jsonl("wiki.jsonl")
    corpus = Corpus.from_rows([{"title": "Ada", "text": "Ada Lovelace was ..."}])
    corpus[0]            # {"id": "0", "contents": "\\"Ada\\"\\nAda Lovelace was ..."}
    corpus.hit(0, 0.87)  # Hit(id="0", title="Ada", ...)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from workbench.errors import ConfigError
from workbench.search.hits import Hit, join_contents


def normalise_row(row: Any, where: str) -> dict[str, Any]:
    """Check one row and give it `id` and `contents`. `where` names the row in errors."""
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: a corpus row must be a JSON object, got {type(row).__name__}")
    out = dict(row)
    if "contents" in out:
        if not isinstance(out["contents"], str):
            raise ConfigError(f"{where}: 'contents' must be a string")
    elif "text" in out:
        out["contents"] = join_contents(str(out.get("title", "")), str(out["text"]))
    else:
        raise ConfigError(f"{where}: a corpus row needs 'contents' (\"Title\"\\ntext) or 'title' + 'text'; "
                          f"got keys {sorted(out)}")
    return out


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the normalised rows of a JSONL corpus (blank lines skipped; ids default to the row
    index). A malformed line raises `ConfigError` naming its line number."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"corpus file {path} does not exist; pass a JSONL file with one passage per line")
    n = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: not valid JSON ({exc.msg}); each line must be one JSON "
                                  f"object like {{\"id\": \"0\", \"contents\": \"\\\"Title\\\"\\ntext\"}}") from None
            r = normalise_row(row, where)
            r["id"] = str(r.get("id", n))
            n += 1
            yield r


class Corpus:
    """An in-memory list of normalised rows; ids default to the row index."""

    def __init__(self, rows: list[dict[str, Any]], path: Path | None = None):
        self.rows = rows
        self.path = path

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> Corpus:
        out = []
        for i, row in enumerate(rows):
            r = normalise_row(row, f"corpus row {i}")
            r["id"] = str(r.get("id", i))
            out.append(r)
        return cls(out)

    @classmethod
    def from_jsonl(cls, path: str | Path) -> Corpus:
        """Read a JSONL file. A malformed line raises `ConfigError` naming its line number."""
        path = Path(path)
        return cls(list(iter_jsonl(path)), path=path)

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as f:
            for r in self.rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        return path

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def contents(self) -> list[str]:
        """Every row's `contents`, in row order (what indexes are built from)."""
        return [r["contents"] for r in self.rows]

    def hit(self, i: int, score: float) -> Hit:
        """Row `i` as a `Hit` carrying `score`."""
        return Hit.from_row(self.rows[i], score)

    def __repr__(self) -> str:
        src = f", path={str(self.path)!r}" if self.path else ""
        return f"Corpus({len(self)} rows{src})"
