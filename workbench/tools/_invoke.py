"""Running one tool call so that nothing it does escapes: every outcome is a plain value or a text.

    outcome = invoke_sync(tool, {"query": "q"}, limit=20_000)       # in a worker thread
    outcome = await invoke_async(tool, {"query": "q"}, limit=20_000)  # on the event loop
    outcome.result / outcome.error                                    # exactly what the kernel gets

A tool may raise anything (`SystemExit`, `KeyboardInterrupt`, `StopIteration`, `GeneratorExit`, a
custom BaseException, an exception whose `str()` raises) or return anything. A future or task
carrying SystemExit or KeyboardInterrupt stops the event loop, and one carrying StopIteration never
completes, so none of them leaves these functions: they become `Outcome.error`. A result becomes
plain JSON (tuples → lists, int keys → str), long text is truncated, and text follows
`workbench.safetext` (lone surrogates → U+FFFD).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from workbench.runtime.protocol import MAX_DEPTH, too_deep
from workbench.safetext import safe_json, safe_text
from workbench.tools.registry import Tool


@dataclass
class Outcome:
    """What a tool call produced, as it goes on the wire: a plain JSON result or an error text."""

    result: Any = None
    error: str | None = None


def invoke_sync(tool: Tool, arguments: dict[str, Any], limit: int) -> Outcome:
    """In a worker thread. Never raises: a future carrying SystemExit or StopIteration would
    reach (or hang) the event loop."""
    try:
        value = tool.fn(**arguments)
    except BaseException as exc:
        return Outcome(error=describe_failure(tool.name, exc, limit))
    return wire_result(tool.name, value, limit)


async def invoke_async(tool: Tool, arguments: dict[str, Any], limit: int) -> Outcome:
    """On the event loop. Never raises, except the cancellation of the task running it."""
    try:
        value = await tool.fn(**arguments)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():  # the timeout or the gateway closing
            raise
        return Outcome(error=describe_failure(tool.name, exc, limit))
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit …: the tool's failure
        return Outcome(error=describe_failure(tool.name, exc, limit))
    return wire_result(tool.name, value, limit)


def wire_result(name: str, value: Any, limit: int) -> Outcome:
    """`value` as the kernel will receive it: plain JSON, a long str truncated, text made valid."""
    full = len(value) if type(value) is str else None
    try:
        # tuples → lists, int keys → str, subclasses → plain values (a long str is cut first: cheap)
        plain = json.loads(json.dumps(value[:limit] if full is not None and full > limit else value))
    except (TypeError, ValueError, RecursionError):
        return Outcome(
            error=f"{name}() returned a {type(value).__name__}, which is not JSON-able; tools "
            "must return str, numbers, bools, None, lists or dicts"
        )
    except BaseException as exc:  # e.g. a dict subclass whose items() raises
        return Outcome(error=describe_failure(name, exc, limit, "returned a result that could not be read"))
    if isinstance(plain, str):
        full = len(plain) if full is None else full
        if full > limit:
            plain = plain[:limit] + f"\n… [truncated {full - limit} chars]"
        return Outcome(result=safe_text(plain))
    if too_deep({"result": plain}):
        return Outcome(error=f"{name}() returned JSON nested deeper than {MAX_DEPTH - 1} levels; return flatter data")
    size = len(json.dumps(plain, ensure_ascii=False))
    if size > limit:
        return Outcome(error=f"{name}() returned {size} chars of JSON (limit {limit}); return less")
    return Outcome(result=safe_json(plain))


def describe_failure(name: str, exc: BaseException, limit: int, what: str = "failed") -> str:
    """`name() failed: Kind: message`, even when str(exc) raises; valid text, at most `limit` chars."""
    try:
        kind = str(type(exc).__name__)
    except BaseException:
        kind = "exception"
    try:
        message = str(exc)
    except BaseException as inner:
        message = f"(its message could not be read: str() raised {type(inner).__name__})"
    text = f"{name}() {what}: {kind}: {message}" if message else f"{name}() {what}: {kind}"
    return safe_text(text if len(text) <= limit else text[:limit] + " …")
