"""Turn `Store.query` / `iter_trajectories` keyword filters into one SQL WHERE clause."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.store._search import ID_CLAUSE, SEARCH_CLAUSE, id_prefix, match_expression

# Summary columns `Store.query` returns (SQL name, in order); `rewards` is decoded to a dict.
SUMMARY_COLUMNS = (
    "id",
    "run_id",
    "role",
    "task_id",
    "question",
    "hops",
    "termination",
    "reward",
    "rewards",
    "reward_spec",
    "num_steps",
    "num_host_calls",
    "final_answer",
    "error",
    "policy",
    "origin_id",
    "parent_id",
    "started_at",
    "ended_at",
)
_SQL_NAMES = {"rewards": "rewards_json"}


def select(names: Sequence[str], reads: Mapping[str, str]) -> str:
    """The SELECT list for these summary columns: `reads` says how to read a column whose SQL is not
    its name (the stage columns of a read-only store written before them, `_stages.expressions`)."""
    return ", ".join(reads.get(n, _SQL_NAMES.get(n, n)) for n in names)


# filter name -> (column, operator); list values turn "=" into "IN".
_FILTERS = {
    "run": ("run_id", "="),
    "role": ("role", "="),
    "termination": ("termination", "="),
    "hops": ("hops", "="),
    "policy": ("policy", "="),
    "task_id": ("task_id", "="),
    "origin": ("origin_id", "="),
    "phase": ("phase", "="),
    "iteration": ("iteration", "="),
    "train_step": ("train_step", "="),
    "min_reward": ("reward", ">="),
    "max_reward": ("reward", "<="),
    "ids": ("id", "="),
}
FILTER_NAMES = (*_FILTERS, "search", "limit")


def where(filters: dict[str, Any], reads: Mapping[str, str] | None = None) -> tuple[str, list[Any]]:
    """`(sql, params)` for the filters: a WHERE clause, ORDER BY and LIMIT. None means no filter.
    `reads`: how to read columns whose SQL is not their name (as `select`)."""
    unknown = sorted(set(filters) - set(FILTER_NAMES))
    if unknown:
        raise ConfigError(f"unknown trajectory filter(s) {unknown}; use any of {list(FILTER_NAMES)}")
    clauses: list[str] = []
    params: list[Any] = []
    for name, (column, op) in _FILTERS.items():
        value = filters.get(name)
        if value is None:
            continue
        column = (reads or {}).get(column, column)
        if isinstance(value, (list, tuple, set, frozenset)):
            if op != "=":
                raise ConfigError(f"{name} takes one number, not a list")
            values = list(value)
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
            params += values
        else:
            clauses.append(f"{column} {op} ?")
            params.append(value)
    query = str(filters.get("search") or "")
    expression, prefix = match_expression(query), id_prefix(query)
    if expression is not None:  # full text, words in any order, or an id's start (_search.py)
        clauses.append(f"({SEARCH_CLAUSE} OR {ID_CLAUSE})" if prefix else SEARCH_CLAUSE)
        params += [expression, prefix, f"{prefix}\U0010ffff"] if prefix else [expression]
    sql = ("WHERE " + " AND ".join(clauses) + " " if clauses else "") + "ORDER BY started_at, rowid"
    limit = filters.get("limit")
    if limit is not None:
        if not isinstance(limit, int) or limit < 0:
            raise ConfigError(f"limit must be a non-negative int, got {limit!r}")
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params
