"""The HTML pieces: notepad diff, rich outputs, truncation marks, and PlotPane's two modes."""

from __future__ import annotations

import plotly.graph_objects as go

from workbench.trajectory import HostCall, Step
from workbench.widgets import _render


def test_notepad_diff_states():
    before = {"facts": ["a"], "plan": "p", "gone": 1}
    after = {"facts": ["a", "b"], "plan": "p", "new": True}
    assert _render.notepad_diff(before, after) == {
        "facts": "changed",
        "plan": "same",
        "new": "added",
        "gone": "removed",
    }
    html = _render.notepad_html(before, after)
    assert 'wb-note wb-removed" data-key="gone"' in html and "line-through" in html
    assert _render.notepad_html({}, {}).endswith("empty</i>")


def test_observation_rendering_covers_text_errors_images_and_truncation():
    step = Step(
        index=0,
        raw="",
        code="1/0",
        observation={
            "outputs": [
                {"output_type": "stream", "name": "stderr", "text": "warn\n"},
                {"output_type": "execute_result", "data": {"text/html": "<b>bold</b>", "text/plain": "b"}},
                {
                    "output_type": "error",
                    "ename": "ZeroDivisionError",
                    "evalue": "division by zero",
                    "traceback": ["\x1b[31mZeroDivisionError\x1b[0m: division by zero"],
                },
            ]
        },
        observation_text="…[output truncated]…",
    )
    html = _render.observation_html(step)
    assert "warn" in html and "<b>bold</b>" in html
    assert "ZeroDivisionError: division by zero" in html and "\x1b" not in html
    assert "output truncated" in html and "shown to the model" in html
    flat = Step(index=0, raw="", observation={"stdout": "<tag>", "error": "boom", "timed_out": True})
    html = _render.observation_html(flat)
    assert "&lt;tag&gt;" in html and "boom" in html and "timed out" in html
    assert "no output" in _render.observation_html(Step(index=0, raw=""))


def test_code_is_highlighted_escaped_and_long_text_cut():
    html = _render.code_html("x = '<script>'  # note")
    assert "<script>" not in html and "&lt;script&gt;" in html and "style=" in html
    text, cut = _render.clip("a" * 10_000, 100)
    assert cut and len(text) < 200 and "9900 characters cut" in text
    calls = _render.host_calls_html([HostCall(name="search", arguments={"q": "x"}, error="down")])
    assert "search(" in calls and "down" in calls


def test_figure_grid_redraws_in_place_and_reports_clicks():
    from workbench.widgets._plots import FigureGrid, PlotPane, plotly_js

    grid = FigureGrid({"a": go.Figure(go.Bar(x=[1], y=[float("nan")], name="a"))})
    assert grid.figures[0]["data"][0]["y"] == [None]
    grid.update("b", go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="b"), layout={"title": {"text": "t"}}))
    assert [f["name"] for f in grid.figures] == ["a", "b"] and grid.panes["b"].figure.layout.title.text == "t"
    clicks = []
    grid.on_click(lambda name, point: clicks.append((name, point["customdata"])))
    grid._on_message(grid, {"type": "click", "name": "b", "point": {"customdata": [1, 2]}}, [])
    assert clicks == [("b", [1, 2])]
    grid._on_message(grid, {"type": "need_plotly"}, [])  # plotly.js from the plotly package
    sent = grid.comm.messages[-1][1]["data"]
    assert sent["method"] == "custom" and sent["content"]["source"] == plotly_js()
    assert "plotly.js v" in plotly_js()[:200]
    pane = PlotPane(go.Figure(go.Bar(x=[1], y=[2])))
    pane.update(go.Figure(go.Scatter(x=[1], y=[5], name="c")))
    assert [t.name for t in pane.figure.data] == ["c"]
