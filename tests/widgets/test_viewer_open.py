"""Opening a TrajectoryViewer: the list comes from one column read (no trajectory decoded but the
one shown), widget and first trajectory leave in one message, a refresh that finds nothing new
sends nothing, and whatever text or numbers a run holds, the table is strict JSON."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import comm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench.store.store as store_module
import workbench.widgets.viewer as viewer_module
from workbench.safetext import safe_text
from workbench.store import Store
from workbench.widgets import TrajectoryViewer, _table
from workbench.widgets._detail import NO_QUESTION


@pytest.fixture
def opened(dummy_comm, monkeypatch) -> list[dict]:
    """The keyword arguments of every comm a widget opens (its first message)."""
    calls: list[dict] = []
    recording = comm.create_comm

    def create_comm(**kwargs):
        calls.append(kwargs)
        return recording(**kwargs)

    monkeypatch.setattr(comm, "create_comm", create_comm)
    return calls


@pytest.fixture
def decodes(monkeypatch) -> list[int]:
    """Counts the trajectories the store decodes whole (`from_row`)."""
    count = [0]
    real = store_module.from_row

    def counting(row):
        count[0] += 1
        return real(row)

    monkeypatch.setattr(store_module, "from_row", counting)
    return count


def test_the_widget_opens_with_its_list_and_first_trajectory_in_one_message(run, opened, states):
    run_dir, _ = run
    viewer = TrajectoryViewer(run_dir)
    state = opened[-1]["data"]["state"]
    first = viewer.rows.id[0]
    assert state["selected"] == first and state["detail"]["id"] == first and state["step"] == 0
    assert state["choices"]["role"] == ["proposer", "solver"]
    table = json.loads(bytes(opened[-1]["buffers"][opened[-1]["data"]["buffer_paths"].index(["table_json"])]))
    assert table == viewer.table and table["n"] == 11 and table["id"][0] == first
    assert states(viewer) == []  # no follow-up updates


def test_a_big_run_opens_with_its_first_page_and_reads_the_rest_when_asked(run, opened, monkeypatch, decodes):
    run_dir, ids = run
    monkeypatch.setattr(viewer_module, "FIRST_PAGE", 4)
    viewer = TrajectoryViewer(run_dir)
    sent = opened[-1]
    page = json.loads(bytes(sent["buffers"][sent["data"]["buffer_paths"].index(["table_json"])]))
    assert (page["n"], page["total"], page["partial"]) == (4, 11, True)
    assert sent["data"]["state"]["selected"] == page["id"][0] == sent["data"]["state"]["detail"]["id"]
    assert decodes[0] <= 2 and tables_sent(viewer) == 0
    viewer._on_message(viewer, {"action": "table"}, [])  # what the drawn page asks for
    assert tables_sent(viewer) == 1 and viewer.table["n"] == 11 and not viewer.table["partial"]
    assert viewer.table["id"][:4] == page["id"] and viewer.selected == page["id"][0]
    viewer._on_message(viewer, {"action": "table"}, [])  # a second view asks again: nothing new
    assert tables_sent(viewer) == 1
    proposers = TrajectoryViewer(run_dir)  # Python asking reads the rest too
    proposers.set_filters(role="proposer")
    assert set(proposers.rows.id) == set(ids["proposer"]) and proposers.choices["hops"] == [1, 2, 3]


def test_the_list_decodes_no_trajectory_but_the_one_shown(tmp_path, make_traj, decodes):
    with Store(tmp_path) as store:
        for p in range(30):
            prop = make_traj(100 + p, role="proposer")
            prop.metadata = {"question": f"Which river crosses town {p}?", "iteration": 1}
            store.write(prop)
            store.write(make_traj(p, origin=prop.id))
    viewer = TrajectoryViewer(tmp_path)
    assert decodes[0] <= 2  # the first row (and its origin)
    shown = dict(zip(viewer.table["id"], viewer.table["question"], strict=True))
    props = viewer.rows[viewer.rows.role == "proposer"]
    assert len(props) == 30 and all(shown[i].startswith("Which river crosses town") for i in props.id)
    assert viewer.detail["id"] == viewer.table["id"][0]


def test_a_refresh_that_finds_nothing_new_sends_nothing(tmp_path, make_traj, states):
    run_dir = tmp_path / "live"
    with Store(run_dir) as writer:
        writer.write_many([make_traj(i) for i in range(3)])
        viewer = TrajectoryViewer(run_dir)
        assert viewer.refresh() == 3 and states(viewer) == []
        writer.record_rewards(viewer.rows.id[2], {"total": 0.25}, "f1")
        assert viewer.refresh() == 3
        assert tables_sent(viewer) == 1 and viewer.table["reward"][2] == 0.25
        assert viewer.refresh() == 3 and tables_sent(viewer) == 1


def tables_sent(viewer) -> int:
    """How many updates carried the table (a binary buffer, so named in buffer_paths)."""
    msgs = [kwargs.get("data", args[0] if args else None) for args, kwargs in viewer.comm.messages]
    return sum(["table_json"] in m.get("buffer_paths", []) for m in msgs if isinstance(m, dict))


def test_rows_keep_their_types_and_order(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    rows = viewer.rows
    assert str(rows.hops.dtype) == "Int64" and str(rows.reward.dtype) == "float64"
    assert rows.started_at.is_monotonic_increasing and set(_table.LIST_COLUMNS) < set(rows.columns)
    assert rows.set_index("id").loc[ids["proposer"][0], "question"].startswith("Who founded")


def test_the_table_gate_catches_what_json_refuses():
    cols = {name: [None, None] for name in _table.LIST_COLUMNS}
    cols.update(
        id=["a", "b\ud800"],
        shown_question=["q\udcff", "ok"],
        reward=[math.inf, math.nan],
        final_answer=["x" * 500, None],
        role=["solver", "solver"],
        num_steps=[1, 2],
        num_host_calls=[0, 0],
        started_at=[1.0, -math.inf],
    )
    table, payload = _table.encode_table(cols)
    assert json.loads(payload, parse_constant=pytest.fail) == table
    assert table["reward"] == [None, None] and table["started_at"] == [1.0, None]
    assert table["id"] == ["a", "b\ufffd"] and table["question"][0] == "q\ufffd"
    assert len(table["answer"][0]) == _table.ANSWER_CHARS and table["role"]["codes"] == [0, 0]


_text = st.one_of(st.text(), st.text().map(lambda s: s + "\ud800"))  # lone surrogates too
_rewards = st.one_of(st.none(), st.floats(), st.sampled_from([math.inf, -math.inf, math.nan]))


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_text, st.text(max_size=100), _text, _rewards, st.booleans()), min_size=1, max_size=4))
def test_any_text_and_rewards_reach_the_page_as_strict_json(make_traj, rows):
    with tempfile.TemporaryDirectory() as tmp:
        with Store(Path(tmp)) as store:
            for i, (question, answer, policy, reward, proposer) in enumerate(rows):
                t = make_traj(i, role="proposer" if proposer else "solver", policy=policy or "p", steps=1, reward=None)
                t.task.question, t.final_answer = question, answer
                if proposer:
                    t.metadata = {"question": question[::-1]}
                store.write(t)
                if reward is not None:
                    store.record_rewards(t.id, {"total": reward}, "any")
        viewer = TrajectoryViewer(tmp)
        table = json.loads(viewer.table_json, parse_constant=pytest.fail)
        assert table == viewer.table and table["n"] == len(rows)
        for i, (question, answer, _policy, reward, proposer) in enumerate(rows):
            want = (safe_text(question[::-1]) or NO_QUESTION) if proposer else safe_text(question)
            assert table["question"][i] == want[: _table.QUESTION_CHARS]
            assert table["answer"][i] == safe_text(answer)[: _table.ANSWER_CHARS]
            ok = reward is not None and math.isfinite(reward)
            assert table["reward"][i] == (reward if ok else None)
        assert viewer.detail["id"] == table["id"][0]
        viewer.store.close()


def test_proposers_on_the_first_page_show_their_own_question(tmp_path, make_traj, opened, monkeypatch):
    monkeypatch.setattr(viewer_module, "FIRST_PAGE", 2)
    with Store(tmp_path) as store:
        for i in range(4):
            t = make_traj(i, role="proposer" if i % 2 == 0 else "solver")
            t.metadata = {"question": f"Own question {i}?"} if i % 2 == 0 else {}
            store.write(t)
    viewer = TrajectoryViewer(tmp_path)
    sent = opened[-1]
    page = json.loads(bytes(sent["buffers"][sent["data"]["buffer_paths"].index(["table_json"])]))
    assert page["question"] == ["Own question 0?", "Who founded the city that hosts museum #1?"]
    assert viewer.table["question"][2] == "Own question 2?"
