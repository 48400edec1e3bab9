"""The one gate to the front end: no NaN or ±inf in any widget state or figure."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.widgets._safe import finite, finite_figure, finite_number

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.sampled_from([pd.NA, np.float64("nan"), np.int64(3), np.inf]),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def _same_where_finite(raw, clean) -> None:
    if isinstance(raw, float) or isinstance(raw, np.floating):
        assert clean == (float(raw) if math.isfinite(raw) else None)
    elif isinstance(raw, (list, tuple)):
        assert len(raw) == len(clean)
        for r, c in zip(raw, clean, strict=True):
            _same_where_finite(r, c)
    elif isinstance(raw, dict):
        assert len(clean) <= len(raw)


@settings(max_examples=300, deadline=None)
@given(values)
def test_finite_output_is_strict_json_and_keeps_finite_values(value):
    clean = finite(value)
    json.dumps(clean, allow_nan=False)  # raises on NaN/inf
    _same_where_finite(value, clean)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=8))
def test_figures_lose_every_non_finite_number(ys):
    fig = go.Figure(
        go.Scatter(x=list(range(len(ys))), y=ys, customdata=[[y, y] for y in ys]),
        layout={"yaxis": {"range": [ys[0], 1.0]}},
    )
    clean = finite_figure(fig)
    json.dumps(clean.to_plotly_json(), allow_nan=False, default=list)
    assert [y if math.isfinite(y) else None for y in ys] == list(clean.data[0].y)


def test_finite_number():
    assert finite_number("1.5") == 1.5 and finite_number(float("inf")) is None
    assert finite_number(pd.NA) is None and finite_number(None) is None and finite_number("x") is None
