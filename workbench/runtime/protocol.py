"""The wire format between the in-kernel runtime and the host's tool gateway.

Newline-delimited JSON over a unix stream socket: one JSON object per line, UTF-8, each request
answered by exactly one reply line, in order. `json.dumps` never emits a raw newline, so a line
is always one whole message.

Requests:
    {"id": 7, "op": "call", "tool": "search", "args": ["q"], "kwargs": {"top_k": 2}, "token": "…"}
    {"id": 8, "op": "notepad", "snapshot": {…}, "token": "…"}     # push the latest notepad
Replies:
    {"id": 7, "ok": true, "result": "Doc 1 (Title: …) …"}
    {"id": 7, "ok": false, "error": "unknown tool 'serch'; available tools: search, …"}

Text follows `workbench.safetext` both ways: invalid UTF-8 bytes and lone surrogates (raw or as
`\\ud800` escapes) become U+FFFD, so neither side ever receives text it cannot encode again.
A request over the gateway's byte limit, nested deeper than `MAX_DEPTH`, or a line that is not a
JSON object, gets an error reply and the connection is closed.
"""

from __future__ import annotations

import re

from workbench.safetext import safe_bytes, safe_json, safe_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENV_SOCKET = "WORKBENCH_GATEWAY"  # the kernel's env var naming the gateway socket
DEFAULT_SOCKET = "/run/workbench/gateway.sock"  # where the kernel sandbox sees it
MAX_DEPTH = 100  # nesting of lists/objects in one message
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class NestingError(ValueError):
    """A message nests lists/objects deeper than MAX_DEPTH."""


def encode(message: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON; lone surrogates anywhere in `message` are sent as U+FFFD."""
    import json

    return safe_text(json.dumps(message, ensure_ascii=False, separators=(",", ":"))).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """Parse one line into a JSON object with valid text only; raises ValueError otherwise."""
    import json

    text = safe_bytes(line)
    try:
        message = json.loads(text)
    except RecursionError:
        raise NestingError(f"message nested deeper than {MAX_DEPTH} levels; send flatter JSON") from None
    if not isinstance(message, dict):
        raise ValueError(f"expected a JSON object, got {type(message).__name__}")
    # Cheap scans first: deep nesting needs that many brackets, a lone surrogate needs a backslash-u escape.
    if text.count("[") + text.count("{") > MAX_DEPTH and too_deep(message):
        raise NestingError(f"message nested deeper than {MAX_DEPTH} levels; send flatter JSON")
    return safe_json(message) if _SURROGATE_ESCAPE.search(text) else message


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when lists/objects in `value` nest more than `limit` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False
