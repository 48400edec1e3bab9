"""The store's light reads: `columns` (plain lists), `metadata` (without parsing steps) and
`reward_records`, each checked against the full reads they stand in for."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.store import Store
from workbench.store._rows import decode_metadata

COLUMNS = (
    "id",
    "role",
    "question",
    "hops",
    "reward",
    "rewards",
    "num_steps",
    "final_answer",
    "policy",
    "origin_id",
    "started_at",
)


def test_columns_match_query_in_order_and_filters(store, make_traj):
    for i in range(6):
        store.write(
            make_traj(i, role="proposer" if i % 3 == 0 else "solver", reward=i / 5, hops=None if i == 4 else 1 + i % 2)
        )
    df = store.query()
    cols = store.columns(COLUMNS)
    assert cols["id"] == df["id"].tolist() and cols["question"] == df["question"].tolist()
    assert cols["reward"] == df["reward"].tolist()
    assert cols["hops"] == [None if h is pd.NA else int(h) for h in df["hops"]]
    assert [json.loads(r) for r in cols["rewards"]] == df["rewards"].tolist()
    solvers = store.columns(["id", "reward"], role="solver", min_reward=0.3)
    assert solvers["id"] == store.query(role="solver", min_reward=0.3)["id"].tolist()
    assert store.columns(["id"], role="critic") == {"id": []}
    assert store.columns(["id"], ids=cols["id"][4:1:-1])["id"] == cols["id"][2:5]  # in store order
    assert store.columns(["id"], limit=2)["id"] == cols["id"][:2]
    assert list(store.metadata(ids=[cols["id"][1]])) == [cols["id"][1]]
    with pytest.raises(ConfigError, match="unknown summary column"):
        store.columns(["id", "data"])
    with pytest.raises(ConfigError, match="unknown trajectory filter"):
        store.columns(["id"], colour="red")


def test_reward_records_are_the_history_as_dicts(store, make_traj):
    t = make_traj(1)
    store.write(t)
    store.record_rewards(t.id, {"total": 0.5}, "f1", provenance={"author": "me", "note": "x"})
    records = store.reward_records(t.id)
    assert [r["spec_name"] for r in records] == ["em", "f1"]
    assert records[1]["rewards"] == {"total": 0.5} and records[1]["provenance"] == {"note": "x"}
    frame = store.reward_history(t.id)
    assert list(frame.columns) == list(records[0]) and len(frame) == 2
    for name in ("spec_name", "rewards", "total", "created_at", "provenance"):
        assert frame[name].tolist() == [r[name] for r in records]
    assert store.reward_records("missing") == [] and len(store.reward_history("missing")) == 0


# metadata values as JSON holds them, with keys chosen to trip a text search for the key
_keys = st.one_of(st.sampled_from(["metadata", "question", "started_at", '"metadata":', "}", ","]), st.text(max_size=8))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(metadata=st.dictionaries(_keys, _json, max_size=4), question=st.text(max_size=30))
def test_metadata_equals_the_full_decode(tmp_path: Path, make_traj, metadata, question):
    t = make_traj(0, steps=2)
    t.metadata = {**metadata, "question": question}
    t.task.metadata = {"metadata": {"nested": '"metadata":{}'}}  # a decoy before the real key
    with Store(tmp_path / "meta") as store:
        store.write(t)
        full = store.get(t.id).metadata
        assert store.metadata()[t.id] == full
        assert store.metadata(role="proposer") == {}


@pytest.mark.parametrize(
    "text",
    [
        '{"steps":[],"metadata":{"a":{"metadata":{"b":1}}},"started_at":1.0}',  # key nested in it
        '{"metadata":{"q":"x"},"steps":[{"metadata":{"q":"decoy"}}]}',  # another field follows
        '{"metadata" : {"q": "spaced"} , "started_at": 2}',
        '{"steps":[]}',
    ],
)
def test_metadata_reads_any_layout_of_the_blob(text):
    want = json.loads(text).get("metadata") or {}
    assert decode_metadata("zlib-json", zlib.compress(text.encode())) == want
    assert decode_metadata("json", text.encode()) == want
