"""Notepad values holding lone surrogates come back as valid Unicode (U+FFFD), never an error."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.runtime import Notepad
from workbench.safetext import REPLACEMENT, has_surrogates, safe_text

any_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=60).map("".join)
some_text = any_text.filter(lambda t: safe_text(t).strip())


def utf8_json(snapshot) -> bytes:
    return json.dumps(snapshot, ensure_ascii=False).encode("utf-8")  # raises on a surrogate


def test_surrogates_in_every_section_are_replaced():
    pad = Notepad()
    pad.add_todo(["a \ud800", "b \udcff"])
    pad.update_todo(1, "done", text="c \udced")
    pad.add_fact("fact \ud800")
    pad.write_draft("draft \udc80")
    snap = pad.snapshot()
    assert [t["text"] for t in snap["todos"]] == [f"c {REPLACEMENT}", f"b {REPLACEMENT}"]
    assert snap["facts"] == [f"fact {REPLACEMENT}"] and snap["draft"] == f"draft {REPLACEMENT}"
    assert not has_surrogates(pad.render())
    utf8_json(snap)


def test_values_placed_behind_the_api_are_replaced_in_the_snapshot():
    pad = Notepad()
    pad._facts.append("raw \udcff")  # model code can reach the internals
    assert pad.snapshot()["facts"] == [f"raw {REPLACEMENT}"]


def test_a_snapshot_from_the_kernel_with_surrogates_loads_safe():
    snap = {
        "todos": [{"id": 1, "text": "t \ud800", "status": "pending"}],
        "facts": ["f \udcff"],
        "draft": "d \udced",
        "next_id": 2,
    }
    pad = Notepad.from_snapshot(snap)
    assert not has_surrogates(pad.render())
    assert pad.facts == (f"f {REPLACEMENT}",)


@settings(max_examples=500, deadline=None)
@given(todo=some_text, fact=some_text, draft=any_text)
def test_any_text_round_trips_as_its_safe_form(todo, fact, draft):
    seen = []
    pad = Notepad(on_change=seen.append)
    pad.add_todo(todo)
    pad.add_fact(fact)
    pad.write_draft(draft)
    snap = pad.snapshot()
    assert snap["todos"][0]["text"] == safe_text(todo).strip()
    assert snap["facts"] == [safe_text(fact).strip()]
    assert snap["draft"] == safe_text(draft)
    for s in (snap, *seen):  # every pushed snapshot too
        utf8_json(s)
    again = Notepad.from_snapshot(json.loads(utf8_json(snap)))
    assert again.snapshot() == snap and again.render() == pad.render()
