"""The viewer's search is the store's full-text search: words in any order, in code and output too,
applied in Python and in the browser alike."""

from __future__ import annotations

from workbench.store import Store
from workbench.widgets import TrajectoryViewer


def test_search_finds_words_in_any_order_in_code_and_output(run):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    assert viewer.search("x_2 museum 11").id.tolist() == [ids["solver"][4]]  # code: x_2 = search('museum 11')
    assert viewer.search("11 result").id.tolist() == [ids["solver"][4]]  # output: "result 0 for museum 11"
    assert viewer.search("prop0001").id.tolist() == [ids["proposer"][1]]  # an id's first 8 characters
    assert viewer.search("nowhere to be found").empty
    assert len(viewer.rows) == 11  # search() leaves the list as it is


def test_a_search_typed_in_the_browser_is_answered_from_the_store(run, states):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.set_state({"query": {"search": "founder 51"}})  # Enter in the search box
    assert viewer.query["found"] == [ids["loose"][1]] and viewer.rows.id.tolist() == [ids["loose"][1]]
    assert viewer.selected == ids["loose"][1] and viewer.filters == {"search": "founder 51"}
    assert any(s.get("query", {}).get("found") == [ids["loose"][1]] for s in states(viewer))  # sent back
    viewer.set_filters(search=None)
    assert "found" not in viewer.query and len(viewer.rows) == 11


def test_refresh_keeps_the_matches_of_a_search_current(run, make_traj):
    run_dir, ids = run
    viewer = TrajectoryViewer(run_dir)
    viewer.set_filters(search="museum 51")
    with Store(run_dir) as store:
        store.write(make_traj(510, run_id="run-b", policy="tiny"))  # "museum #510" starts with 51
    viewer.refresh()
    assert len(viewer.rows) == 2 and viewer.rows.id[0] == ids["loose"][1]
