"""`RewardTuner`: edit a `RewardSpec` with sliders and dropdowns and watch a run re-score live.

    from workbench.widgets import RewardTuner
    tuner = RewardTuner("runs/demo", spec="l0", role="solver")  # filters pick the trajectories
    tuner.set_weight("l0.format", 0.3)        # or drag the slider; scores update in memory
    tuner.scores                              # id, hops, stored, rescored, per-component values
    tuner.save("rewards/mine.toml")           # .toml or .json, loadable by RewardSpec.load
    tuner.apply(reason="less weight on format")  # record into the store, with provenance

Nothing is written to the store until `apply()`.
"""

from __future__ import annotations

import getpass
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from workbench.errors import ConfigError
from workbench.widgets import _figures, _render
from workbench.widgets._plots import FigureGrid
from workbench.widgets._source import open_store

if TYPE_CHECKING:
    import pandas as pd

    from workbench.rewards import RewardSpec
    from workbench.store import Store


# What a variant does, shown next to it (workbench/rewards/l0.py's rules; docs/fidelity.md, L0).
VARIANT_NOTES = {
    ("has_answer", "fixed"): (
        "has_answer=fixed: the 0.1·has_answer term pays only for a non-blank answer; an empty or "
        "whitespace-only submission gets 0 (L0's code pays for any submitted string: has_answer=l0)"
    ),
    ("has_answer", "l0"): (
        "has_answer=l0: the 0.1·has_answer term pays for any submitted answer, the empty string "
        "included, as L0's code does; no submission gets 0 either way"
    ),
    ("no_output", "success"): (
        "no_output=success: a cell that ran and produced no output (no stdout, stderr, display, "
        "result or error) scores code 1, a success (L0's code scores it 0: no_output=zero)"
    ),
    ("no_output", "zero"): (
        "no_output=zero: a cell that ran and produced no output scores code 0, as L0's code does; "
        "a turn whose code did not run scores 0 either way"
    ),
}


def variant_notes(params: dict[str, Any]) -> list[str]:
    """The notes (`VARIANT_NOTES`) for these param values, in order."""
    return [VARIANT_NOTES[(n, str(v))] for n, v in params.items() if (n, str(v)) in VARIANT_NOTES]


def _variant_options(component: str, param: str, default: Any) -> list[str]:
    """Values a string param takes in the presets (e.g. variant: code, paper), default first."""
    from workbench.rewards.presets import PRESETS

    seen = [str(default)]
    if param == "normalizer":
        from workbench.rewards.text import NORMALIZERS

        seen += [n for n in NORMALIZERS if n not in seen]
    for preset in PRESETS.values():
        for c in preset["components"]:
            value = c.get("params", {}).get(param)
            if c["name"] == component and isinstance(value, str) and value not in seen:
                seen.append(value)
    return seen


def spec_to_toml(spec: RewardSpec) -> str:
    """A spec as TOML that `RewardSpec.from_toml` reads back (None fields are left out)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(float(v)) if isinstance(v, float) else str(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        raise ConfigError(f"cannot write {v!r} to TOML; save the spec as .json instead")

    data = spec.to_dict()
    lines = [f"{k} = {value(v)}" for k, v in data.items() if k != "components" and v is not None]
    for c in data["components"]:
        lines += ["", "[[components]]"] + [f"{k} = {value(v)}" for k, v in c.items() if v is not None]
    return "\n".join(lines) + "\n"


class RewardTuner(w.VBox):
    """Weights and variants of a reward spec, re-scored live over a run (see module docstring)."""

    def __init__(
        self,
        source: Store | str | os.PathLike[str],
        spec: RewardSpec | str | None = None,
        *,
        pass_threshold: float = _figures.PASS_THRESHOLD,
        **filters: Any,
    ) -> None:
        from workbench.rewards import list_presets, list_rewards

        self.store = open_store(source)
        self.filters = filters
        self.pass_threshold = pass_threshold
        self._lock = threading.Lock()
        self._quiet = False
        self.scores: pd.DataFrame
        self.error: str | None = None
        self.preset_menu = w.Dropdown(description="preset", options=list_presets(), value=None)
        self.add_menu = w.Dropdown(description="add", options=["", *list_rewards()], value="")
        self.rows_box = w.VBox()
        self.status = w.HTML()
        self.save_path = w.Text(value="reward_spec.toml", description="save to")
        self.save_button = w.Button(description="save spec")
        self.apply_button = w.Button(
            description="apply to store",
            button_style="warning",
            tooltip="record the new scores in the store, with provenance",
        )
        self.plots = FigureGrid(columns=2)
        self.panes = self.plots.panes  # name -> pane; `.figure` is the figure shown
        self.preset_menu.observe(self._on_preset, names="value")
        self.add_menu.observe(self._on_add, names="value")
        self.save_button.on_click(lambda _: self._guard(lambda: self.save(self.save_path.value)))
        self.apply_button.on_click(lambda _: self._guard(self.apply))
        super().__init__(
            [
                w.HBox([self.preset_menu, self.add_menu]),
                self.rows_box,
                self.status,
                w.HBox([self.save_path, self.save_button, self.apply_button]),
                self.plots,
            ],
            layout=w.Layout(width="100%"),
        )
        self.refresh()
        self._load_spec(self._initial_spec(spec))

    # -- the spec ----------------------------------------------------------------------------
    @property
    def spec(self) -> RewardSpec:
        """The spec the widgets describe now (raises ConfigError if they describe none)."""
        from workbench.rewards import RewardSpec

        return RewardSpec.from_dict(self._spec_dict)

    @spec.setter
    def spec(self, spec: RewardSpec) -> None:
        self._load_spec(spec)

    def set_weight(self, component: str, weight: float) -> None:
        self._row(component)["weight"].value = weight

    def set_param(self, component: str, param: str, value: Any) -> None:
        widgets = self._row(component)["params"]
        if param not in widgets:
            raise ConfigError(f"{component!r} has no param {param!r}; it has {sorted(widgets)}")
        widgets[param].value = value

    # -- data --------------------------------------------------------------------------------
    def refresh(self) -> int:
        """Reload the trajectories (a run still writing gains new ones); returns how many."""
        with self._lock:
            self.trajectories = list(self.store.iter_trajectories(**self.filters))
        if hasattr(self, "_spec_dict"):
            self.rescore()
        return len(self.trajectories)

    def rescore(self) -> pd.DataFrame:
        """Score every loaded trajectory with the current spec, in memory; redraw the plots."""
        import pandas as pd

        with self._lock:
            spec = self.spec
            results = spec.score_many(self.trajectories)
            df = pd.DataFrame(
                {
                    "id": [t.id for t in self.trajectories],
                    "hops": pd.array([t.hops for t in self.trajectories], dtype="Int64"),
                    "stored": [t.reward for t in self.trajectories],
                    "rescored": [r["total"] for r in results],
                },
                dtype=object,
            )
            df = pd.concat([df, pd.DataFrame(results).drop(columns="total", errors="ignore")], axis=1)
            df[["stored", "rescored"]] = df[["stored", "rescored"]].astype(float)
            self.scores = df
        stored = df["stored"].notna()
        changes = _figures.rank_changes(df.set_index("id")["stored"], df.set_index("id")["rescored"])
        self.plots.update_many(
            {
                "histogram": _figures.reward_histogram(
                    df, "stored", compare=df["rescored"], title="total reward: stored vs re-scored"
                ),
                "pass_rate": _figures.pass_rate_by_hops(df, ("stored", "rescored"), self.pass_threshold),
                "rank_changes": _figures.rank_change_figure(
                    changes,
                    empty="no rank changed"
                    if stored.any()
                    else "no stored rewards to rank against: apply() records these",
                ),
            }
        )
        moved = int((stored & (df["stored"] != df["rescored"])).sum())
        passed = (df["stored"] >= self.pass_threshold) != (df["rescored"] >= self.pass_threshold)
        flipped = int((stored & passed).sum())
        unscored = "" if stored.all() else f" · {int((~stored).sum())} had no stored reward"
        self.status.value = (
            f"<b>{_render.esc(spec.name)}</b>: {len(df)} trajectories · mean stored "
            f"{_render.number(df['stored'].mean(), '.3f')} → re-scored "
            f"{_render.number(df['rescored'].mean(), '.3f')} · {moved} changed, {flipped} of them across "
            f"the pass threshold ({self.pass_threshold:g})" + unscored
        )
        return df

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the spec to `path` (.toml or .json) for training (`TrainConfig.reward`)."""
        p = Path(path)
        if p.suffix not in (".toml", ".json"):
            raise ConfigError(f"{p}: save the spec as .toml or .json")
        spec = self.spec
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(spec_to_toml(spec) if p.suffix == ".toml" else spec.to_json() + "\n")
        self.status.value += f" · saved {_render.esc(p)}"
        return p

    def apply(self, reason: str = "tuned in RewardTuner", author: str | None = None) -> dict[str, dict[str, float]]:
        """Record the current spec's scores into the store (reward history keeps the old ones)."""
        from workbench.rewards import rescore
        from workbench.store import Store

        provenance = {"author": author or getpass.getuser(), "reason": reason, "via": "RewardTuner"}
        spec = self.spec
        if self.store.readonly:
            with Store(self.store.run_dir) as writer:
                out = rescore(writer, spec, provenance=provenance, **self.filters)
        else:
            out = rescore(self.store, spec, provenance=provenance, **self.filters)
        self.refresh()
        return out

    # -- internals ---------------------------------------------------------------------------
    def _initial_spec(self, spec: RewardSpec | str | None) -> RewardSpec:
        from workbench.rewards import RewardSpec, list_presets

        if isinstance(spec, str):
            return RewardSpec.load(spec) if Path(spec).suffix else RewardSpec.preset(spec)
        if spec is not None:
            return spec
        used = [t.reward_spec for t in self.trajectories if t.reward_spec in list_presets()]
        return RewardSpec.preset(max(set(used), key=used.count) if used else "search_r1")

    def _on_preset(self, change: dict[str, Any]) -> None:
        from workbench.rewards import RewardSpec

        if not self._quiet:
            self._load_spec(RewardSpec.preset(change["new"]))

    def _load_spec(self, spec: RewardSpec) -> None:
        self._spec_dict = spec.to_dict()
        self._rows: dict[str, dict[str, Any]] = {}
        self.rows_box.children = [self._component_row(c) for c in self._spec_dict["components"]]
        self._quiet = True  # show which preset this is (blank for a spec of your own), loading nothing
        try:
            self.preset_menu.value = spec.name if spec.name in self.preset_menu.options else None
        finally:
            self._quiet = False
        self._changed()

    def _component_row(self, comp: dict[str, Any]) -> w.HBox:
        from workbench.rewards import get_reward

        key = comp.get("key") or comp["name"]
        weight = w.FloatSlider(
            value=comp["weight"],
            min=-2.0,
            max=2.0,
            step=0.05,
            description=key,
            continuous_update=False,
            style={"description_width": "initial"},
        )
        params: dict[str, w.ValueWidget] = {}
        for name, default in get_reward(comp["name"]).params.items():
            current = comp.get("params", {}).get(name, default)
            if isinstance(default, bool):
                params[name] = w.Checkbox(value=bool(current), description=name)
            elif isinstance(default, (int, float)):
                params[name] = w.FloatText(value=float(current), description=name, layout=w.Layout(width="160px"))
            else:
                params[name] = w.Combobox(
                    options=_variant_options(comp["name"], name, default),
                    value=str(current),
                    description=name,
                    ensure_option=False,
                    continuous_update=False,
                    layout=w.Layout(width="220px"),
                )
        remove = w.Button(description="✕", tooltip=f"remove {key}", layout=w.Layout(width="40px"))
        remove.on_click(lambda _: self._remove(key))
        note = w.HTML(layout=w.Layout(margin="0 0 4px 12px"))
        for widget in (weight, *params.values()):
            widget.observe(lambda _: self._changed(), names="value")
        box = w.VBox([w.HBox([weight, *params.values(), remove]), note])
        self._rows[key] = {"comp": comp, "weight": weight, "params": params, "note": note, "box": box}
        self._explain(key)
        return box

    def _explain(self, key: str) -> None:
        """Say what the row's variants do: a line under it, and each variant's own on hover."""
        row = self._rows[key]
        for name, widget in row["params"].items():
            widget.tooltip = VARIANT_NOTES.get((name, str(widget.value)))
        notes = variant_notes({n: x.value for n, x in row["params"].items()})
        row["note"].value = "".join(f'<div style="color:#57606a;font-size:12px">{_render.esc(n)}</div>' for n in notes)

    def _row(self, key: str) -> dict[str, Any]:
        if key not in self._rows:
            raise ConfigError(f"no component {key!r} in the spec; it has {sorted(self._rows)}")
        return self._rows[key]

    def _changed(self) -> None:
        from workbench.rewards import get_reward

        comps = []
        for key, row in self._rows.items():
            self._explain(key)
            defaults = get_reward(row["comp"]["name"]).params
            params = {
                n: (int(x.value) if isinstance(defaults[n], int) and not isinstance(defaults[n], bool) else x.value)
                for n, x in row["params"].items()
            }
            comps.append(
                {
                    **row["comp"],
                    "weight": row["weight"].value,
                    "params": {n: v for n, v in params.items() if v != defaults[n]},
                }
            )
        self._spec_dict = {**self._spec_dict, "components": comps}
        self._guard(self.rescore)

    def _remove(self, key: str) -> None:
        if len(self._rows) == 1:
            self.status.value = '<span style="color:#cf222e">a spec needs one component</span>'
            return
        box = self._rows.pop(key)["box"]
        self.rows_box.children = [c for c in self.rows_box.children if c is not box]
        self._changed()

    def _on_add(self, change: dict[str, Any]) -> None:
        name = change["new"]
        if not name or name in self._rows:
            return
        comp = {"name": name, "weight": 1.0, "params": {}, "key": None}
        self.rows_box.children = [*self.rows_box.children, self._component_row(comp)]
        self.add_menu.value = ""
        self._changed()

    def _guard(self, fn: Any) -> None:
        try:
            fn()
            self.error = None
        except ConfigError as exc:
            self.error = str(exc)
            self.status.value = f'<span style="color:#cf222e">{_render.esc(exc)}</span>'
