"""The viewer's trajectory list: summary rows from the store, sent to the browser compactly, and
the one filter/search/sort rule that both the browser (viewer.js) and Python (`viewer.rows`) apply.

    cols = summary_columns(store)                  # one SQL query; proposers' own questions
    table, payload = encode_table(cols)            # columns; repeated strings as codes into levels
    rows = apply_query(frame(cols), {"role": "solver", "search": "museum", "sort": "-reward"})

Opening a viewer reads only these columns (no trajectory is decoded but for the proposers'
metadata) and builds no DataFrame; `frame` makes one when Python asks for `viewer.rows`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.widgets._calls import fork_count
from workbench.widgets._detail import proposer_question
from workbench.widgets._groups import iteration_at, iteration_starts
from workbench.widgets._safe import finite

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

# filter name -> summary column (exact match); dropdowns in the front end.
CHOICE_FILTERS = {
    "run": "run_id",
    "role": "role",
    "termination": "termination",
    "hops": "hops",
    "policy": "policy",
    "iteration": "iteration",
    "train_step": "train_step",
    "phase": "phase",
}
NUMBER_FILTERS = ("hops", "iteration", "train_step")  # choices that are integers
FILTER_NAMES = (*CHOICE_FILTERS, "min_reward", "max_reward")
QUERY_KEYS = (*FILTER_NAMES, "search", "found", "ids", "sort")
SORT_KEYS = ("started_at", "reward", "hops", "num_steps", "forks", "role", "termination", "question", "id")
# the store columns the list reads (Store.columns), in `viewer.rows` order
LIST_COLUMNS = (
    "id",
    "run_id",
    "role",
    "task_id",
    "question",
    "hops",
    "termination",
    "reward",
    "num_steps",
    "num_host_calls",
    "final_answer",
    "policy",
    "origin_id",
    "phase",
    "iteration",
    "train_step",
    "started_at",
)
# columns sent as codes into a list of distinct values
_CATEGORICAL = ("role", "run_id", "termination", "policy", "task_id", "origin_id", "phase")
HARNESS_ROLE = "harness"  # the role of a rollout a model gateway recorded
PROPOSE_PHASE = "propose"  # the evolve loop's proposing phase names only its iteration in the lineage
QUESTION_CHARS = 240
ANSWER_CHARS = 80


def summary_columns(store: Store, limit: int | None = None) -> dict[str, list[Any]]:
    """`LIST_COLUMNS` as plain lists (the first `limit` rows, or all) plus `shown_question` (a
    proposer's own question, else the task's) and `forks` (a harness rollout's fork count, else None)."""
    cols = store.columns(LIST_COLUMNS, limit=limit)
    cols["shown_question"] = shown_questions(store, cols["id"], cols["role"], cols["question"], page=limit is not None)
    cols["forks"] = fork_counts(store, cols["id"], cols["role"], page=limit is not None)
    fill_stages(store, cols)
    return cols


def fill_stages(store: Store, cols: dict[str, list[Any]]) -> None:
    """Complete the stage columns as the viewer shows them: a row whose lineage names an iteration
    but no phase is in the propose phase, and one naming no iteration takes the evolve iteration
    running when it started (the run's `iteration_start` events; as `_groups` and `_attempts` do)."""
    cols["phase"] = [
        PROPOSE_PHASE if phase is None and iteration is not None else phase
        for phase, iteration in zip(cols["phase"], cols["iteration"], strict=True)
    ]
    starts = iteration_starts(store)
    if starts:
        cols["iteration"] = [
            iteration_at(starts, started) if iteration is None and started is not None else iteration
            for iteration, started in zip(cols["iteration"], cols["started_at"], strict=True)
        ]


def shown_questions(
    store: Store, ids: list[str], roles: list[str], questions: list[Any], page: bool = False
) -> list[str]:
    """The question each row shows: the task's, or for a proposer the question it wrote (read from
    its metadata, only these rows' when they are a `page`; a proposer written since `ids` were
    read keeps its task's)."""
    shown = ["" if q is None else str(q) for q in questions]
    if "proposer" in roles:
        mine = [i for i, role in zip(ids, roles, strict=True) if role == "proposer"]
        own = store.metadata(ids=mine) if page else store.metadata(role="proposer")
        for i, (traj_id, role) in enumerate(zip(ids, roles, strict=True)):
            if role == "proposer" and traj_id in own:
                shown[i] = proposer_question(own[traj_id])
    return shown


def fork_counts(store: Store, ids: list[str], roles: list[str], page: bool = False) -> list[int | None]:
    """Each row's fork count: a harness rollout's (read from its metadata, only these rows' when they
    are a `page`), None for a trajectory no model gateway recorded."""
    if HARNESS_ROLE not in roles:
        return [None] * len(ids)
    mine = [i for i, role in zip(ids, roles, strict=True) if role == HARNESS_ROLE]
    meta = store.metadata(ids=mine) if page else store.metadata(role=HARNESS_ROLE)
    return [fork_count(meta.get(i)) if role == HARNESS_ROLE else None for i, role in zip(ids, roles, strict=True)]


def summary_frame(store: Store) -> pd.DataFrame:
    """`store.query()` plus `shown_question` (every summary column; for the report)."""
    df = store.query()
    df["shown_question"] = shown_questions(store, df["id"].tolist(), df["role"].tolist(), df["question"].tolist())
    return df


def frame(cols: dict[str, list[Any]]) -> pd.DataFrame:
    """The columns as the DataFrame `viewer.rows` filters (hops as Int64, reward as float)."""
    import pandas as pd

    df = pd.DataFrame({name: cols[name] for name in (*LIST_COLUMNS, "shown_question")})
    df["forks"] = pd.array(cols.get("forks") or [None] * len(df), dtype="Int64")
    for name in NUMBER_FILTERS:
        df[name] = df[name].astype("Int64")
    df["reward"] = df["reward"].astype("float64")
    return df


def _codes(values: list[Any]) -> dict[str, Any]:
    levels = [v for v in dict.fromkeys(values) if v is not None]
    index: dict[Any, int] = {v: i for i, v in enumerate(levels)}
    index[None] = -1
    return {"levels": levels, "codes": list(map(index.__getitem__, values))}


def encode_table(cols: dict[str, list[Any]], total: int | None = None) -> tuple[dict[str, Any], bytes]:
    """What the browser's list needs, as compact columns, and that as strict JSON bytes (no NaN or
    ±inf, valid UTF-8). Store columns are plain already, so the `finite` gate runs only when the
    first encoding refuses a value. `total`: the run's size when `cols` are its first page."""
    n = len(cols["id"])
    table: dict[str, Any] = {
        "n": n,
        "total": n if total is None else max(n, total),
        "partial": total is not None and total > n,
        "id": cols["id"],
        "question": [q[:QUESTION_CHARS] for q in cols["shown_question"]],
        "answer": [None if a is None else str(a)[:ANSWER_CHARS] for a in cols["final_answer"]],
        **{
            name: cols[name]
            for name in ("reward", "hops", "num_steps", "num_host_calls", "started_at", "iteration", "train_step")
        },
        "forks": cols.get("forks") or [None] * n,
        **{name: _codes(cols[name]) for name in _CATEGORICAL},
    }
    try:
        return table, json.dumps(table, allow_nan=False, ensure_ascii=False).encode()
    except (TypeError, ValueError):  # NaN/inf, a lone surrogate, a numpy value
        table = finite(table)
        return table, json.dumps(table, allow_nan=False, ensure_ascii=False).encode()


def choices(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Per choice filter, the distinct values in the run (sorted)."""
    out = {}
    for name, column in CHOICE_FILTERS.items():
        values = set(cols[column]) - {None, ""}
        out[name] = sorted(int(v) for v in values) if name in NUMBER_FILTERS else sorted(values, key=str)
    return out


def check_query(query: dict[str, Any], available: dict[str, list[Any]]) -> dict[str, Any]:
    """`query` validated (unknown keys and values not in the run raise ConfigError)."""
    unknown = sorted(set(query) - set(QUERY_KEYS))
    if unknown:
        raise ConfigError(f"unknown filter(s) {unknown}; use any of {list(QUERY_KEYS)}")
    for name in CHOICE_FILTERS:
        value = query.get(name)
        if value is not None and value not in available.get(name, []):
            raise ConfigError(f"{name}={value!r} is not in this run; choose one of {available.get(name, [])}")
    sort = query.get("sort")
    if sort is not None and str(sort).lstrip("-") not in SORT_KEYS:
        raise ConfigError(f"cannot sort by {sort!r}; use one of {list(SORT_KEYS)} (prefix '-' for descending)")
    return query


def apply_query(df: pd.DataFrame, query: dict[str, Any]) -> pd.DataFrame:
    """The rows `query` keeps, in its order. The same rule as `applyQuery` in viewer.js:
    choices match exactly, reward bounds drop rows without a reward, `search` keeps the ids in
    `found` (the store's full-text matches, which the viewer puts there) or, without `found` (the
    offline report), is a case-insensitive substring of id, question, answer or policy; `ids`
    keeps only those ids, `sort` is a column name (prefix "-" for descending; rows missing it go
    last)."""
    keep = df
    for name, column in CHOICE_FILTERS.items():
        value = query.get(name)
        if value is not None:
            keep = keep[(keep[column] == value).fillna(False).astype(bool)]
    if query.get("min_reward") is not None:
        keep = keep[(keep["reward"] >= query["min_reward"]).fillna(False)]
    if query.get("max_reward") is not None:
        keep = keep[(keep["reward"] <= query["max_reward"]).fillna(False)]
    if query.get("ids") is not None:
        keep = keep[keep["id"].isin(set(query["ids"]))]
    needle = str(query.get("search") or "").strip().lower()
    if needle and query.get("found") is not None:
        keep = keep[keep["id"].isin(set(query["found"]))]
    elif needle:
        hay = (
            keep["id"]
            + "\n"
            + keep["shown_question"].astype(str).str[:QUESTION_CHARS]
            + "\n"
            + keep["final_answer"].fillna("").astype(str).str[:ANSWER_CHARS]
            + "\n"
            + keep["policy"].fillna("").astype(str)
        ).str.lower()
        keep = keep[hay.str.contains(needle, regex=False)]
    sort = query.get("sort")
    if sort:
        key = str(sort).lstrip("-")
        column = "shown_question" if key == "question" else key
        keep = keep.sort_values(column, ascending=not str(sort).startswith("-"), kind="stable", na_position="last")
    return keep.reset_index(drop=True)
