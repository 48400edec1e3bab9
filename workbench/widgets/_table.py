"""The viewer's trajectory list: summary rows from the store, sent to the browser compactly, and
the one filter/search/sort rule that both the browser (viewer.js) and Python (`viewer.rows`) apply.

    df = summary_frame(store)                      # one row per trajectory, proposers' own questions
    payload = encode_table(df)                     # columns; repeated strings as codes into levels
    rows = apply_query(df, {"role": "solver", "search": "museum", "sort": "-reward"})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.widgets._detail import display_question
from workbench.widgets._safe import finite

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

# filter name -> summary column (exact match); dropdowns in the front end.
CHOICE_FILTERS = {"run": "run_id", "role": "role", "termination": "termination", "hops": "hops",
                  "policy": "policy"}
FILTER_NAMES = (*CHOICE_FILTERS, "min_reward", "max_reward")
QUERY_KEYS = (*FILTER_NAMES, "search", "ids", "sort")
SORT_KEYS = ("started_at", "reward", "hops", "num_steps", "role", "termination", "question", "id")
# columns sent as codes into a list of distinct values
_CATEGORICAL = ("role", "run_id", "termination", "policy", "task_id", "origin_id")
QUESTION_CHARS = 240
ANSWER_CHARS = 80


def summary_frame(store: "Store") -> "pd.DataFrame":
    """`store.query()` plus `shown_question`: a proposer's own question, else the task's."""
    df = store.query()
    df["shown_question"] = df["question"].fillna("")
    if (df["role"] == "proposer").any():
        own = {t.id: display_question(t) for t in store.iter_trajectories(role="proposer")}
        mask = df["role"] == "proposer"
        df.loc[mask, "shown_question"] = df.loc[mask, "id"].map(own).fillna(df.loc[mask, "question"])
    return df


def _codes(values: list[Any]) -> dict[str, Any]:
    levels: dict[Any, int] = {}
    codes = []
    for v in values:
        if v is None or v != v:
            codes.append(-1)
            continue
        codes.append(levels.setdefault(v, len(levels)))
    return {"levels": list(levels), "codes": codes}


def _objects(column: "pd.Series") -> list[Any]:
    # numpy's object array lists faster than iterating pandas' arrow-backed strings
    return column.to_numpy(dtype=object, na_value=None).tolist()


def encode_table(df: "pd.DataFrame") -> dict[str, Any]:
    """The summary rows as compact columns (finite only): what the browser's list needs."""
    hops = df["hops"].astype("Float64")
    out: dict[str, Any] = {
        "n": len(df),
        "id": _objects(df["id"]),
        "question": [q[:QUESTION_CHARS] for q in _objects(df["shown_question"].astype(str))],
        "answer": [None if a is None or a != a else str(a)[:ANSWER_CHARS] for a in _objects(df["final_answer"])],
        "reward": df["reward"].tolist(),
        "hops": [None if h is None or h != h else int(h) for h in hops.astype(object)
                 .where(hops.notna(), None)],
        "num_steps": df["num_steps"].astype(int).tolist(),
        "num_tool_calls": df["num_tool_calls"].astype(int).tolist(),
        "started_at": df["started_at"].tolist(),
    }
    for column in _CATEGORICAL:
        out[column] = _codes(_objects(df[column]))
    return finite(out)


def choices(df: "pd.DataFrame") -> dict[str, list[Any]]:
    """Per choice filter, the distinct values in the run (sorted)."""
    out = {}
    for name, column in CHOICE_FILTERS.items():
        values = {v for v in df[column].dropna().tolist() if v != ""}
        out[name] = sorted((int(v) for v in values), key=int) if name == "hops" else sorted(values, key=str)
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


def apply_query(df: "pd.DataFrame", query: dict[str, Any]) -> "pd.DataFrame":
    """The rows `query` keeps, in its order. The same rule as `applyQuery` in viewer.js:
    choices match exactly, reward bounds drop rows without a reward, `search` is a
    case-insensitive substring of id, question, answer or policy, `ids` keeps only those ids,
    `sort` is a column name (prefix "-" for descending; rows missing it go last)."""
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
    if needle:
        hay = (keep["id"] + "\n" + keep["shown_question"].astype(str).str[:QUESTION_CHARS] + "\n"
               + keep["final_answer"].fillna("").astype(str).str[:ANSWER_CHARS] + "\n"
               + keep["policy"].fillna("").astype(str)).str.lower()
        keep = keep[hay.str.contains(needle, regex=False)]
    sort = query.get("sort")
    if sort:
        key = str(sort).lstrip("-")
        column = "shown_question" if key == "question" else key
        keep = keep.sort_values(column, ascending=not str(sort).startswith("-"), kind="stable",
                                na_position="last")
    return keep.reset_index(drop=True)
