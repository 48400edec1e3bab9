"""One rule for text that is not valid Unicode, wherever it crosses a boundary.

Kernel output, notepad values, tool arguments and results, model output and final answers may hold
lone surrogates (``"\\ud800"``, or ``"\\udcff"`` from ``surrogateescape``) or arrive as bytes that are
not UTF-8. None of that may raise at a boundary (kernel ↔ host, gateway ↔ tools, host → store,
host → tokenizer). The rule, applied everywhere:

- an invalid UTF-8 byte sequence becomes U+FFFD REPLACEMENT CHARACTER (``bytes.decode(errors="replace")``);
- a lone surrogate becomes U+FFFD; a high+low surrogate pair written as two code points is joined
  into the character it encodes (what a UTF-16 reader would see);
- valid text passes through unchanged (and fast: one regex scan).

So the damage is visible (�), local (one character per bad unit) and never an exception.

    >>> safe_text("ok \\ud800 forged")
    'ok \\ufffd forged'
    >>> safe_bytes(b"caf\\xc3\\xa9 \\xff")
    'café \\ufffd'

Stdlib only: the in-kernel runtime imports it too.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, overload

__all__ = ["REPLACEMENT", "has_surrogates", "safe_bytes", "safe_json", "safe_text"]

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_T = TypeVar("_T")


def has_surrogates(text: str) -> bool:
    """True when `text` cannot be encoded as UTF-8 (it holds a surrogate code point)."""
    return _SURROGATE.search(text) is not None


def safe_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (surrogate pairs joined)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def safe_bytes(data: bytes | bytearray | memoryview) -> str:
    """`data` decoded as UTF-8, each invalid sequence replaced by U+FFFD."""
    return bytes(data).decode("utf-8", "replace")


@overload
def safe_json(value: str | bytes | bytearray) -> str: ...
@overload
def safe_json(value: _T) -> _T: ...
def safe_json(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings, scalars) with every string made safe.

    Keys too. Values of other types pass through untouched; a value that needed no change is
    returned as is (no copy), so the common case costs one scan. The type says a value keeps its
    type; bytes nested in a container become str, which it does not show.
    """
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        items = [(safe_json(k), safe_json(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        cleaned = [safe_json(v) for v in value]
        if all(a is b for a, b in zip(cleaned, value, strict=True)):
            return value
        return type(value)(cleaned) if isinstance(value, list) else tuple(cleaned)
    if isinstance(value, (bytes, bytearray)):
        return safe_bytes(value)
    return value
