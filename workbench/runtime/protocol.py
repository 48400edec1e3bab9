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

A request over the gateway's byte limit, or a line that is not a JSON object, gets an error
reply and the connection is closed.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENV_SOCKET = "WORKBENCH_GATEWAY"  # the kernel's env var naming the gateway socket
DEFAULT_SOCKET = "/run/workbench/gateway.sock"  # where the kernel sandbox sees it


def encode(message: dict[str, Any]) -> bytes:
    import json

    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """Parse one line; raises ValueError when it is not a JSON object."""
    import json

    message = json.loads(line.decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError(f"expected a JSON object, got {type(message).__name__}")
    return message
