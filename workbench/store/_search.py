"""Full-text search over a run: an SQLite FTS5 index of each trajectory's question, think, code,
output and answer, kept in step with `Store.write` and queried with `Store.query(search=...)`.

    store.query(search="capital Teivrei")        # both words, in any order, as word prefixes
    store.query(search="3fa2b7c1")               # ids are found by their first 8+ characters

Python, not SQLite, splits text into words, on both sides, so a query finds what was written
whatever its characters. A word is a run of letters and digits (`[^\\W_]+` after `str.lower`);
the index holds those words, one space apart, under SQLite's `ascii` tokenizer, which keeps each
one whole (it splits on ASCII punctuation and spaces only, and our words hold neither). A query's
words are each quoted and matched as prefixes, so no query text is FTS5 syntax (`"`, `*`, `NEAR`,
`-`, `AND` are plain words or dropped). A query without words (`->`, `%`) matches the symbols it
holds: each distinct non-space character that is not a word character is indexed as one more
token, `·` + its code point in hex, which no word can spell.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from workbench.safetext import safe_text

FTS_TABLE = "trajectories_fts"
FTS_COLUMNS = ("question", "think", "code", "output", "answer", "label", "symbols")  # label: run, role, policy
# detail=none: only which rows hold a word (no positions), the smallest and cheapest index (every
# query term is one word, so phrases and NEAR are never needed); columnsize=0: no per-row sizes
# (they serve ranking, and matches are listed in the run's order)
FTS_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {{schema}}.{FTS_TABLE} USING fts5("
    f"{', '.join(FTS_COLUMNS)}, tokenize='ascii', detail=none, columnsize=0)"
)
FTS_INSERT = (
    f"INSERT INTO {{schema}}.{FTS_TABLE} (rowid, {', '.join(FTS_COLUMNS)}) VALUES (?{', ?' * len(FTS_COLUMNS)})"
)
# `+rowid`: check membership while scanning the list's order (the covering index
# trajectories_order), not one table lookup per match: 1.6x faster for a match of every row
SEARCH_CLAUSE = f"+rowid IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ?)"
ID_CLAUSE = "(id >= ? AND id < ?)"
ID_PREFIX_CHARS = 8  # the list shows this much of an id: a query this long may be an id's start

_WORD = re.compile(r"[^\W_]+")
_SYMBOL_MARK = "\u00b7"  # not a word character, and non-ASCII: `ascii` keeps it inside a token


def words(text: str) -> list[str]:
    """The distinct words of `text`, lower-cased, in first-seen order."""
    return _words(safe_text(text).lower())


def symbols(text: str) -> list[str]:
    """The symbol tokens of `text`: one per distinct character that is neither a word character
    nor white space, in code point order."""
    return _symbols(set(safe_text(text).lower()))


def _words(lowered: str) -> list[str]:
    return list(dict.fromkeys(_WORD.findall(lowered)))


def _symbols(chars: set[str]) -> list[str]:
    found = sorted(c for c in chars if not c.isspace() and not _WORD.match(c))
    return [f"{_SYMBOL_MARK}{ord(c):x}" for c in found]


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH text for a user's query: every word as a quoted prefix, or without words
    every symbol; None for a blank query (no filter)."""
    terms = [f'"{w}"*' for w in words(query)] or [f'"{s}"' for s in symbols(query)]
    return " AND ".join(terms) if terms else None


def id_prefix(query: str) -> str | None:
    """The query as the start of a trajectory id (ids are not words in the index: a number
    would match every id starting with it), when it is one token of `ID_PREFIX_CHARS` or more."""
    text = safe_text(query).strip()
    return text if len(text) >= ID_PREFIX_CHARS and not any(c.isspace() for c in text) else None


def _parts(data: dict[str, Any]) -> dict[str, list[Any]]:
    """A trajectory's texts (its `to_dict()` form) per index column."""
    task = data.get("task") or {}
    meta = data.get("metadata") or {}
    steps = [s for s in data.get("steps") or [] if isinstance(s, dict)]
    policy = (data.get("lineage") or {}).get("policy")
    if isinstance(policy, dict):
        policy = policy.get("name") or policy.get("model") or policy.get("backend")
    return {
        "question": [task.get("question"), meta.get("question")],
        "think": [s.get("think") or (None if s.get("code") else s.get("raw")) for s in steps],
        "code": [s.get("code") for s in steps],
        "output": [s.get("observation_text") for s in steps],
        "answer": [data.get("final_answer")],
        "label": [data.get("run_id"), data.get("role"), policy],
    }


def document(data: dict[str, Any]) -> tuple[str, ...]:
    """One index row's column values (`FTS_COLUMNS` order) for a trajectory's `to_dict()`."""
    lowered = {name: safe_text("\n".join(str(t) for t in values if t)).lower() for name, values in _parts(data).items()}
    row = [" ".join(_words(lowered[name])) for name in FTS_COLUMNS[:-1]]
    return (*row, " ".join(_symbols(set().union(*lowered.values()))))


def has_index(conn: sqlite3.Connection, schema: str = "main") -> bool:
    found = conn.execute(f"SELECT 1 FROM {schema}.sqlite_master WHERE name = ?", (FTS_TABLE,)).fetchone()
    return found is not None


def index_row(conn: sqlite3.Connection, rowid: int, row: tuple[str, ...], replaced: bool) -> None:
    """Index one written trajectory (`document`'s row, inside the write's transaction);
    `replaced`: it was stored before, so its old entry goes first."""
    if replaced:
        conn.execute(f"DELETE FROM main.{FTS_TABLE} WHERE rowid = ?", (rowid,))
    conn.execute(FTS_INSERT.format(schema="main"), (rowid, *row))
