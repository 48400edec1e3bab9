"""`FigureGrid`: plotly figures in a notebook cell, sized to the cell, with click callbacks.

One anywidget draws several figures in a responsive CSS grid (a figure never gets wider than
its cell: each column is `minmax(0, 1fr)` and plotly re-lays out on every resize). plotly.js
comes from the installed `plotly` package, sent once per page and only when the page lacks it;
nothing is fetched from a CDN.

    grid = FigureGrid({"reward": fig_a, "pass": fig_b}, columns=2)
    grid.on_click(lambda name, point: print(name, point["customdata"]))
    grid.update("reward", new_fig)           # redraw one figure in place
    grid.panes["reward"].figure              # the plain go.Figure last shown
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import anywidget
import plotly.graph_objects as go
import traitlets

from workbench.widgets._safe import finite, finite_figure
from workbench.widgets._static import bundle, css

STATIC = Path(__file__).parent / "static"


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The plotly.js bundle shipped inside the `plotly` Python package."""
    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


@dataclass
class Pane:
    """One figure of a grid: `.figure` is the last `go.Figure` shown."""

    grid: FigureGrid
    name: str

    @property
    def figure(self) -> go.Figure:
        return self.grid._figures[self.name]

    def update(self, figure: go.Figure) -> None:
        self.grid.update(self.name, figure)


class FigureGrid(anywidget.AnyWidget):
    """Figures keyed by name in a grid of `columns` columns (see the module docstring)."""

    _esm = bundle("figures")
    _css = css("figures")
    figures: traitlets.List[dict[str, Any]] = traitlets.List().tag(
        sync=True
    )  # [{"name", "data", "layout"}], finite only
    columns = traitlets.Int(2).tag(sync=True)

    def __init__(self, figures: dict[str, go.Figure] | None = None, *, columns: int = 2, **kwargs: Any) -> None:
        super().__init__(columns=columns, **kwargs)
        self._figures: dict[str, go.Figure] = {}
        self._order: list[str] = []
        self._callbacks: list[Callable[[str, dict[str, Any]], None]] = []
        self.panes: dict[str, Pane] = {}
        self.on_msg(self._on_message)
        for name, fig in (figures or {}).items():
            self._figures[name] = finite_figure(fig)
            self._order.append(name)
            self.panes[name] = Pane(self, name)
        self._sync()

    def update(self, name: str, figure: go.Figure) -> None:
        """Show `figure` as `name` (added at the end when new)."""
        self.update_many({name: figure})

    def update_many(self, figures: dict[str, go.Figure]) -> None:
        for name, fig in figures.items():
            if name not in self._figures:
                self._order.append(name)
                self.panes[name] = Pane(self, name)
            self._figures[name] = finite_figure(fig)
        self._sync()

    def on_click(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        """Call `callback(figure_name, point)` when a point is clicked; `point` has x, y,
        curve (trace index), trace (its name) and customdata."""
        self._callbacks.append(callback)

    def click(self, name: str, point: dict[str, Any]) -> None:
        """What a click on `point` of figure `name` does (the front end calls this)."""
        for callback in self._callbacks:
            callback(name, point)

    def _sync(self) -> None:
        self.figures = [{"name": n, **finite(self._figures[n].to_plotly_json())} for n in self._order]

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: list[bytes]) -> None:
        if content.get("type") == "need_plotly":
            self.send({"type": "plotly", "source": plotly_js()})
        elif content.get("type") == "click" and content.get("name") in self._figures:
            self.click(content["name"], dict(content.get("point") or {}))


class PlotPane:
    """One figure in its own `FigureGrid`: `.widget` to display, `.update(fig)` to redraw."""

    live = True

    def __init__(self, figure: go.Figure | None = None, name: str = "figure") -> None:
        self.name = name
        self.widget = FigureGrid({name: figure if figure is not None else go.Figure()}, columns=1)

    @property
    def figure(self) -> go.Figure:
        return self.widget.panes[self.name].figure

    def update(self, figure: go.Figure) -> None:
        self.widget.update(self.name, figure)
