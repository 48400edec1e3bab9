"""`run_blocking`: finish a coroutine from sync code, whether or not an event loop is running.

Sync entry points that call async backends (a simulated search engine, an LLM judge) may be
reached from plain scripts, from Jupyter (a loop is running) or from inside a coroutine on an
agent's loop. Outside a loop this is `asyncio.run`; inside one, the coroutine gets a fresh loop on
a helper thread (never the caller's loop, which is blocked waiting for it, so no deadlock).
Stdlib only.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its result (its exception is re-raised here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="workbench-blocking")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


__all__ = ["run_blocking"]
