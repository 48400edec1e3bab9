"""`TrajectoryViewer`: a run's trajectories in a searchable, sortable list and one trajectory's
turns, tokens, rewards and links beside it (an anywidget; its front end is static/viewer*.js).

    from workbench.widgets import TrajectoryViewer
    viewer = TrajectoryViewer("runs/demo")         # read-only; works while the run writes
    viewer                                         # last expression in a cell: renders it
    viewer.set_filters(role="solver", min_reward=0.5, search="museum")
    viewer.search("capital teivrei")               # full text: words in any order, any field
    viewer.filter(phase="solver_update", train_step=3, iteration=1)   # the rows they keep
    viewer.select(viewer.rows.id[0]); viewer.next_step()
    viewer.goto_origin(); viewer.go_back()         # solver attempt <-> the proposer that asked
    viewer.compare(id_a, id_b)                     # side by side, first divergent turn marked
    viewer.groups(step=2)                          # GRPO groups of a step: rewards, advantages, drops
    viewer.across_steps("task-7")                  # one prompt's rollouts at each training step
    viewer.show_ids(ids, "hop 3 at iteration 1")   # what a dashboard click does
    ticker = viewer.auto_refresh(5)                # re-read the store every 5 s; ticker.stop()

A harness rollout (your own agent through a model gateway) shows each model call as a turn: its
model, tool calls, policy version and mask; each segment boundary with its fork reason; its auxiliary
calls as never trained on; the list counts its forks (`_calls.py`).

Token ids are decoded with the run's own tokenizer when one is on disk (the lineage's model path,
or a model directory in or beside the run; never downloaded); `tokenizer=tok` picks one,
`decode=False` shows ids only.

Keys (with the viewer focused): j/k or ↓/↑ move through trajectories, h/l or ←/→ through
turns, / searches (full text over question, think, code, output and answer; Enter applies it),
t switches between turns and tokens.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from workbench.errors import ConfigError, StoreError
from workbench.trajectory import Trajectory
from workbench.widgets import _table
from workbench.widgets._detail import first_divergence, trajectory_detail
from workbench.widgets._groups import across_steps, step_groups
from workbench.widgets._safe import finite
from workbench.widgets._source import Ticker, open_store, restart_ticker
from workbench.widgets._static import bundle, css
from workbench.widgets._tokenizer import Decoder, find_tokenizer

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

FILTER_NAMES = _table.FILTER_NAMES
LIST_COLUMNS = _table.LIST_COLUMNS  # the store columns the list reads (`Store.columns`), in `rows` order
FIRST_PAGE = 500  # rows that go out with the widget; a bigger run's rest follows once it is drawn


class TrajectoryViewer(anywidget.AnyWidget):
    """Browse, filter, step through and compare the trajectories of one run (module docstring)."""

    _esm = bundle("viewer")
    _css = css("viewer")
    # compact summary columns (_table.encode_table) as one JSON buffer: a binary message, which
    # ipywidgets sends without walking 10,000-element lists
    table_json = traitlets.Bytes(b"{}").tag(sync=True)
    choices = traitlets.Dict().tag(sync=True)  # filter name -> values present in the run
    query = traitlets.Dict().tag(sync=True)  # filters, search, ids, sort (both sides apply it)
    link_label = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    detail = traitlets.Dict().tag(sync=True)  # _detail.trajectory_detail of the selected one
    compare_state = traitlets.Dict().tag(sync=True)
    pinned = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        source: Store | str | os.PathLike[str],
        *,
        tokenizer: Decoder | None = None,
        decode: bool = True,
        **kwargs: Any,
    ) -> None:
        self.store = open_store(source)
        self.tokenizer = tokenizer
        self.decode_tokens = decode
        self._lock = threading.RLock()
        self._cols: dict[str, list[Any]] = {}  # _table.summary_columns, as last read
        self._frame: pd.DataFrame | None = None  # the same as a DataFrame, built on first use
        self._traj: Trajectory | None = None
        self._history: list[str] = []
        self._ticker: Ticker | None = None
        self._table: dict[str, Any] = {}  # what table_json holds, decoded
        self._partial = False  # _cols and _table hold only the first page
        # the list (or its first page) and the first trajectory go out with the widget itself
        super().__init__(**self._open_state(), **kwargs)
        self.observe(self._on_selected, names="selected")
        self.observe(self._on_query, names="query")
        self.on_msg(self._on_message)

    # -- state -----------------------------------------------------------------------------
    @property
    def rows(self) -> pd.DataFrame:
        """The summary rows the list shows now (after filters, search and sort): the columns of
        `_table.LIST_COLUMNS` plus `shown_question` and `forks` (a harness rollout's fork count)."""
        self._complete()
        return _table.apply_query(self._all(), self.query)

    @property
    def table(self) -> dict[str, Any]:
        """The list's columns as the browser gets them (`_table.encode_table`)."""
        self._complete()
        return self._table

    @property
    def trajectory(self) -> Trajectory | None:
        return self._traj

    @property
    def step_index(self) -> int:
        return self.step

    @step_index.setter
    def step_index(self, index: int) -> None:
        traj = self._require()
        self.step = max(0, min(int(index), max(len(traj.steps) - 1, 0)))

    @property
    def filters(self) -> dict[str, Any]:
        """Active filters, e.g. {"role": "solver", "min_reward": 0.5}."""
        return {k: v for k, v in self.query.items() if v not in (None, "") and k not in ("sort", "found")}

    @filters.setter
    def filters(self, values: dict[str, Any]) -> None:
        """Replace every filter: unnamed ones are cleared (the sort order stays)."""
        self._set_query({"sort": self.query.get("sort"), **values})

    def set_filters(self, **values: Any) -> None:
        """Set filters (`run`, `role`, `termination`, `hops`, `policy`, `iteration`, `train_step`,
        `phase`, `min_reward`, `max_reward`, `search`, `ids`, `sort`); None clears one. The list follows."""
        self._set_query({**self.query, **values})

    def filter(self, **values: Any) -> pd.DataFrame:
        """The run's rows (as `rows` holds them) that these filters keep (`set_filters`' names), e.g.
        `filter(phase="solver_update", train_step=3)`: `iteration` is the evolve iteration (the
        lineage's, else the one running when the rollout started), `train_step` the trainer's step
        that used it, `phase` the lineage's ("propose" for the evolve loop's proposing phase). The
        list is left as it is: `set_filters(...)` shows them there."""
        self._complete()
        query = {k: v for k, v in values.items() if v is not None}
        if str(query.get("search") or "").strip():
            query["found"] = self._found(query["search"])
        return _table.apply_query(self._all(), _table.check_query(query, _table.choices(self._cols)))

    def search(self, text: str) -> pd.DataFrame:
        """The run's rows (as `rows` holds them) whose question, think, code, output or answer
        hold every word of `text`, in any order, as word prefixes; a query of 8 or more characters
        also finds the id starting with it. The list is left as it is: `set_filters(search=...)`
        shows the matches there."""
        self._complete()
        return _table.apply_query(self._all(), {"search": text, "found": self._found(text)})

    def groups(self, step: int, iteration: int | None = None) -> pd.DataFrame:
        """Training step `step`'s groups, one row each (`_groups.GROUP_COLUMNS`): each prompt's
        rollouts with their rewards, spread (population std), advantages as trained (a list per
        turn where per-turn credit applies) and which stayed in the loss, then the groups dynamic
        sampling dropped (`dropped` True). Steps restart per evolve iteration: pass `iteration`
        to keep one."""
        return step_groups(self.store, int(step), iteration)

    def across_steps(self, task_id: str) -> pd.DataFrame:
        """One prompt's rollouts at each training step that drew it (iteration, step, rollouts,
        mean, rewards, answers, trajectory_ids), oldest first."""
        return across_steps(self.store, task_id)

    def show_ids(self, ids: list[str], label: str = "") -> None:
        """Show only `ids` (e.g. the trajectories behind a dashboard point), labelled."""
        self.link_label = label or f"{len(ids)} linked trajectories"
        self._set_query({"sort": self.query.get("sort"), "ids": list(ids)})

    def clear_link(self) -> None:
        self.link_label = ""
        self._set_query({k: v for k, v in self.query.items() if k != "ids"})

    # -- reading the store -----------------------------------------------------------------
    def refresh(self) -> int:
        """Re-read the store (new trajectories, rewards, steps of a running episode). Returns the
        number of trajectories in the run."""
        with self._lock:
            changes = self._reread()
            with self.hold_sync():
                for name, value in changes.items():
                    setattr(self, name, value)
            return len(self._cols["id"])

    def _reread(self) -> dict[str, Any]:
        """Read the list again; returns the trait values that changed (the table and choices, and
        the detail of the selection: refreshed, or the first row's when none is selected)."""
        with self._lock:
            cols = _table.summary_columns(self.store)
            table, payload = _table.encode_table(cols)
            self._cols, self._frame, self._partial = cols, None, False
            changes: dict[str, Any] = {}
            if payload != self.table_json:
                self._table = table
                changes.update(table_json=payload, choices=finite(_table.choices(cols)))
                if str(self.query.get("search") or "").strip():  # new rows may match it
                    changes.update(query={**self.query, "found": self._found(self.query["search"])})
            if self._traj is not None and self._traj.id in self.store:
                fresh = self.store.get(self._traj.id)
                if fresh.to_dict() != self._traj.to_dict():
                    changes.update(self._detail_state(fresh, self.step))
            else:
                first = self._first_id()
                if first is not None:
                    changes.update(self._detail_state(self.store.get(first), 0))
            return changes

    def _open_state(self) -> dict[str, Any]:
        """The traits the widget opens with: a run of up to FIRST_PAGE rows whole, a bigger one's
        first page (the front end asks for the rest once it has drawn it, see `_complete`)."""
        total = len(self.store)
        if total <= FIRST_PAGE:
            return self._reread()
        cols = _table.summary_columns(self.store, limit=FIRST_PAGE)
        if not cols["id"]:
            return self._reread()
        self._table, payload = _table.encode_table(cols, total=total)
        self._cols, self._partial = cols, True
        return {
            "table_json": payload,
            "choices": finite(_table.choices(cols)),
            **self._detail_state(self.store.get(cols["id"][0]), 0),
        }

    def _complete(self) -> None:
        """Read the whole list if only its first page is here yet."""
        if self._partial:
            self.refresh()

    def auto_refresh(self, seconds: float | None = 5.0) -> Ticker | None:
        """Re-read the store every `seconds` on a background thread; 0/None stops it."""
        self._ticker = restart_ticker(self._ticker, self.refresh, seconds)
        return self._ticker

    # -- selection and stepping ------------------------------------------------------------
    def select(self, traj_id: str, step: int = 0) -> Trajectory:
        """Show trajectory `traj_id` (or a unique prefix of it) at `step`."""
        with self._lock:
            full = traj_id if traj_id in self.store else self.store.resolve_id(traj_id)
            traj = self.store.get(full)
            self._show(traj, step)
            return traj

    def next_step(self) -> int:
        if self._traj is not None:
            self.step_index = self.step + 1
        return self.step

    def prev_step(self) -> int:
        if self._traj is not None:
            self.step_index = self.step - 1
        return self.step

    def goto_origin(self) -> Trajectory:
        """Jump to the trajectory the current one came from (its `lineage["origin"]`)."""
        current = self._require()
        origin = self.store.origin(current.id)
        if origin is None:
            raise StoreError(
                f"trajectory {current.id[:8]} has no origin in this store (its lineage "
                "names none, or the origin was written to another run)"
            )
        self._history.append(current.id)
        return self.select(origin.id)

    def goto_child(self, traj_id: str) -> Trajectory:
        """Jump to one of the current trajectory's children (e.g. a solver attempt)."""
        current = self._require().id
        traj = self.select(traj_id)
        self._history.append(current)
        return traj

    def go_back(self) -> Trajectory:
        """Return to the trajectory you jumped from with `goto_origin` / `goto_child`."""
        if not self._history:
            raise ConfigError("nothing to go back to; goto_origin() or goto_child() first")
        return self.select(self._history.pop())

    def pin(self, traj_id: str | None = None) -> str:
        """Remember a trajectory (default: the selected one) to compare others with."""
        self.pinned = traj_id or self._require().id
        return self.pinned

    def compare(self, a: str | None, b: str | None = None) -> dict[str, Any]:
        """Two trajectories side by side (`b` defaults to the selected one), the first turn where
        they differ marked; returns what the front end draws."""
        if a is None:
            raise ConfigError("nothing pinned to compare with; select one and pin it first")
        left = self._get(a)
        right = self._require() if b is None else self._get(b)
        self.compare_state = {
            "left": self._detail_of(left),
            "right": self._detail_of(right),
            "divergence": first_divergence(left, right),
            "same_task": left.task.id == right.task.id,
        }
        return self.compare_state

    def close_compare(self) -> None:
        self.compare_state = {}

    # -- internals -------------------------------------------------------------------------
    def _detail_of(self, traj: Trajectory) -> dict[str, Any]:
        """`trajectory_detail` with token ids decoded: by the viewer's tokenizer, else (unless
        `decode=False`) by the run's own, found on disk (`_tokenizer.find_tokenizer`)."""
        tokenizer = self.tokenizer
        if tokenizer is None and self.decode_tokens:
            tokenizer = find_tokenizer(self.store, traj)
        return trajectory_detail(traj, self.store, tokenizer)

    def _get(self, traj_id: str) -> Trajectory:
        return self.store.get(traj_id if traj_id in self.store else self.store.resolve_id(traj_id))

    def _require(self) -> Trajectory:
        if self._traj is None:
            raise ConfigError("no trajectory selected; call viewer.select(traj_id) first")
        return self._traj

    def _all(self) -> pd.DataFrame:
        with self._lock:
            if self._frame is None:
                self._frame = _table.frame(self._cols)
            return self._frame

    def _first_id(self) -> str | None:
        """The id the list shows first (read from the columns while no filter or sort is set)."""
        if not self.query:
            return self._cols["id"][0] if self._cols["id"] else None
        rows = self.rows
        return rows["id"].iloc[0] if len(rows) else None

    def _detail_state(self, traj: Trajectory, step: int) -> dict[str, Any]:
        """Make `traj` the current one; the trait values that show it at `step`."""
        self._traj = traj
        return {
            "detail": self._detail_of(traj),
            "selected": traj.id,
            "step": max(0, min(int(step), max(len(traj.steps) - 1, 0))),
        }

    def _show(self, traj: Trajectory, step: int) -> None:
        with self.hold_sync():
            for name, value in self._detail_state(traj, step).items():
                setattr(self, name, value)

    def _found(self, text: str) -> list[str]:
        """The ids of the store's full-text matches for `text`."""
        ids: list[str] = self.store.columns(("id",), search=text)["id"]
        return ids

    def _set_query(self, query: dict[str, Any]) -> None:
        self._complete()
        query = {k: v for k, v in query.items() if v is not None and v != "" and k != "found"}
        if str(query.get("search") or "").strip():
            query["found"] = self._found(query["search"])
        self.query = _table.check_query(query, _table.choices(self._cols))
        rows = self.rows
        if len(rows) and self.selected not in set(rows["id"]):
            self.select(rows["id"].iloc[0])

    def _on_selected(self, change: dict[str, Any]) -> None:
        new = change["new"]
        if new and (self._traj is None or self._traj.id != new):
            self._guard(lambda: self.select(new))

    def _on_query(self, change: dict[str, Any]) -> None:
        """A search typed in the browser arrives without its matches: find them (the front end
        drops `found` whenever the search text changes)."""
        query = change["new"]
        if str(query.get("search") or "").strip() and query.get("found") is None:
            self._guard(lambda: self._set_query(query))

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: list[bytes]) -> None:
        action = content.get("action")
        target: Any = content.get("id")  # as the front end sent it
        actions = {
            "origin": self.goto_origin,
            "back": self.go_back,
            "pin": lambda: self.pin(target),
            "child": lambda: self.goto_child(target),
            "unpin": lambda: setattr(self, "pinned", ""),
            "compare": lambda: self.compare(target or self.pinned or None),
            "close_compare": self.close_compare,
            "clear_link": self.clear_link,
            "refresh": self.refresh,
            "table": self._complete,
        }
        if action == "prefetch":
            self._prefetch([str(i) for i in (content.get("ids") or [])[:4]])
        elif action in actions:
            self._guard(actions[action])

    def _prefetch(self, ids: list[str]) -> None:
        """Send the details of the trajectories the list will show next (the neighbours of the
        selection), so moving to one draws at once instead of waiting for a round trip."""
        items = {}
        for traj_id in ids:
            if traj_id in self.store:
                items[traj_id] = self._detail_of(self.store.get(traj_id))
        if items:
            self.send({"type": "details", "items": items})

    def _guard(self, fn: Callable[[], object]) -> None:
        try:
            fn()
            self.notice = ""
        except (ConfigError, StoreError) as exc:
            self.notice = str(exc)
