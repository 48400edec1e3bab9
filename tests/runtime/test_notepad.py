"""The notepad: edits, rendering, snapshots, and the errors a model sees when it calls it wrongly."""

import json

import pytest

from workbench.runtime import NOTEPAD_API, Notepad, NotepadError, notepad_api_doc


def test_plan_facts_draft_and_render():
    pad = Notepad()
    assert pad.add_todo(["find the director", "find the birthplace"]) == [1, 2]
    assert pad.add_todo("write the answer") == 3
    pad.update_todo(1, "done")
    pad.update_todo("birthplace", "in progress", text="find where Jane Doe was born")
    pad.update_todo("3", "blocked")
    pad.add_fact("Film X was directed by Jane Doe")
    pad.add_facts(["Jane Doe was born in Lyon", "Lyon is in France"])
    pad.write_draft("Lyon")
    pad.append_draft("(confidence: high)")
    assert pad.render() == (
        "## Notepad\n### Plan\n[x] 1. find the director\n[>] 2. find where Jane Doe was born\n"
        "[!] 3. write the answer\n### Facts\n- Film X was directed by Jane Doe\n"
        "- Jane Doe was born in Lyon\n- Lyon is in France\n### Draft\nLyon\n(confidence: high)"
    )
    assert [t.status for t in pad.todos] == ["done", "in_progress", "blocked"]
    pad.clear()
    assert "empty" in pad.render() and pad.add_todo("again") == 4  # ids keep counting


def test_snapshot_round_trip_is_json():
    pad = Notepad()
    pad.add_todo(["a", "b"])
    pad.update_todo(2, "done")
    pad.add_fact("f")
    pad.write_draft("d")
    snap = json.loads(json.dumps(pad.snapshot()))
    copy = Notepad.from_snapshot(snap)
    assert copy.snapshot() == pad.snapshot() and copy.render() == pad.render()
    assert copy.add_todo("c") == 3


def test_on_change_fires_on_every_edit():
    seen = []
    pad = Notepad(on_change=seen.append)
    pad.add_todo("a")
    pad.update_todo(1, "done")
    pad.add_fact("x")
    pad.write_draft("y")
    pad.clear()
    assert len(seen) == 5 and seen[1]["todos"][0]["status"] == "done" and seen[-1]["facts"] == []


def test_unknown_todo_lists_valid_ones():
    pad = Notepad()
    pad.add_todo(["search the film", "search the actor"])
    with pytest.raises(NotepadError, match=r"no todo with id 9; valid todos: 1 \('search the film'\)"):
        pad.update_todo(9, "done")
    with pytest.raises(NotepadError, match="matches todos 1, 2; pass the id"):
        pad.update_todo("search", "done")
    with pytest.raises(NotepadError, match="no todo matches 'nothing'"):
        pad.update_todo("nothing", "done")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda p: p.update_todo(1, "finished-ish"), "unknown todo status 'finished-ish'; use one of"),
        (lambda p: p.add_todo(""), "todo is empty"),
        (lambda p: p.add_todo(42), "todo must be a str, got int"),
        (lambda p: p.add_facts("one fact"), "for one fact use add_fact"),
        (lambda p: p.add_fact("x" * 5000), "limit 2000"),
        (lambda p: p.write_draft(None), "the draft must be a str"),
        (lambda p: p.update_todo(True, "done"), "pass a todo id"),
    ],
)
def test_bad_calls_say_how_to_call(call, message):
    pad = Notepad()
    pad.add_todo("a")
    with pytest.raises(NotepadError, match=message):
        call(pad)
    assert len(pad.todos) == 1 and pad.todos[0].status == "pending"  # nothing half-applied


def test_sections_are_read_only_views():
    pad = Notepad()
    pad.add_todo("a")
    with pytest.raises(AttributeError, match="update_todo"):
        pad.todos[0].status = "done"
    assert isinstance(pad.facts, tuple)
    pad.draft = "set through the property"
    assert pad.snapshot()["draft"] == "set through the property"


def test_snapshot_errors():
    with pytest.raises(NotepadError, match="newer than this workbench"):
        Notepad.from_snapshot({"version": 99})
    with pytest.raises(NotepadError, match="malformed"):
        Notepad.from_snapshot({"todos": [{"text": "no id"}]})


def test_api_doc_names_every_method():
    for name in ("add_todo", "update_todo", "add_fact", "add_facts", "write_draft", "append_draft", "clear", "render"):
        assert f"notepad.{name}(" in NOTEPAD_API
    assert notepad_api_doc() == NOTEPAD_API
