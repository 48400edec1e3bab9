"""The one gate between store data and a front end: nothing sent to the browser holds NaN or ±inf.

JSON has no NaN; ipywidgets refuses such a message with a red "Out of range float values are not
JSON compliant" warning, and plotly draws nothing. Every widget state and every figure passes here:

    state = finite({"reward": float("nan"), "xs": [1.0, float("inf")]})  # {"reward": None, "xs": [1.0, None]}
    fig = finite_figure(fig)                                             # a copy with NaN → None
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from workbench.safetext import safe_text


def finite(value: Any) -> Any:
    """`value` with every non-finite float (NaN, ±inf, pandas NA, NaT) replaced by None, numpy
    scalars and arrays turned into Python ones, tuples into lists and text made valid Unicode."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(str(k)): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return _finite_list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays, pandas Series
    if callable(tolist):
        return finite(tolist())
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas ships with workbench
        pass
    return safe_text(str(value))


def _finite_list(values: list[Any] | tuple[Any, ...]) -> list[Any]:
    # Fast paths for the long flat columns widgets send (ids, rewards, token ids, logprobs).
    kinds = {type(v) for v in values}
    if kinds <= {int, type(None)}:
        return list(values)
    if kinds <= {float, int, type(None)}:
        return [v if v is None or type(v) is int or math.isfinite(v) else None for v in values]
    if kinds <= {str, type(None)}:
        return [v if v is None else safe_text(v) for v in values]
    return [finite(v) for v in values]


def finite_figure(fig: go.Figure) -> go.Figure:
    """A copy of `fig` whose data and layout hold no NaN/inf (plotly draws a gap for None).
    Arrays plotly would send as base64 typed arrays become plain lists first, so none hides there."""
    return go.Figure(finite(_plain_arrays(fig.to_plotly_json())))


def _plain_arrays(value: Any) -> Any:
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            import base64

            import numpy as np

            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if value.get("shape"):
                shape = value["shape"]
                array = array.reshape(
                    [int(n) for n in str(shape).split(",")] if isinstance(shape, str) else list(shape)
                )
            return array.tolist()
        return {k: _plain_arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_arrays(v) for v in value]
    return value


def finite_number(value: Any) -> float | None:
    """A finite float, or None (for None, NaN, inf, pandas NA and anything not a number)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
