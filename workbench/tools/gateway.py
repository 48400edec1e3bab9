"""The host side of the kernel's only way out: an asyncio unix-socket server running host tools.

    registry = ToolRegistry([search_tool(retriever)])
    async with ToolGateway(registry, rollout_dir / "run" / "gateway.sock", rollout_id="r1") as gw:
        await kernel.execute(gw.setup_code())      # installs notepad + tool stubs in the kernel
        await kernel.execute(step_code)            # the model's code calls search(...)
        step.tool_calls = gw.take_calls()          # every call, as workbench.trajectory.ToolCall
        step.notepad = gw.notepad                  # latest snapshot, pushed by the kernel
        done = gw.final_answer is not None         # set by submit_final_answer(...)

Wire format: `workbench.runtime.protocol` (newline-delimited JSON). Per call: argument check
against the signature, a wall-clock timeout, a result size limit and a per-rollout call budget
(`submit_final_answer` is exempt). Hostile input (garbage, oversize lines, floods, unknown tools,
bad arguments, non-JSON-able results) gets an error reply or a closed connection; it is recorded
and never reaches other connections or other rollouts' gateways. Sync tools run in this gateway's
own thread pool; async tools run on the event loop and must not block it.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import hmac
import json
import logging
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, ToolError
from workbench.runtime.protocol import decode, encode
from workbench.tools.registry import Tool, ToolRegistry
from workbench.trajectory import ToolCall

log = logging.getLogger(__name__)
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes including the NUL


class ToolGateway:
    """Serves one rollout's tool calls on `socket_path`; see the module docstring."""

    def __init__(self, registry: ToolRegistry, socket_path: str | os.PathLike[str], *,
                 rollout_id: str = "", token: str | None = None, call_timeout_s: float = 30.0,
                 max_request_bytes: int = 1_000_000, max_result_chars: int = 20_000,
                 call_budget: int = 100, max_connections: int = 256,
                 max_concurrent_calls: int = 8, idle_timeout_s: float = 600.0) -> None:
        self.registry = registry
        self.socket_path = Path(socket_path)
        if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH:
            raise ConfigError(f"gateway socket path is {len(str(self.socket_path))} bytes, over the "
                              f"{MAX_SOCKET_PATH}-byte unix limit; use a shorter rollout dir")
        self.rollout_id = rollout_id
        self.token = token or secrets.token_hex(16)
        self.call_timeout_s = call_timeout_s
        self.max_request_bytes = max_request_bytes
        self.max_result_chars = max_result_chars
        self.call_budget = call_budget
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.calls: list[ToolCall] = []
        self.final_answer: str | None = None
        self.notepad: dict[str, Any] | None = None  # latest snapshot pushed by the kernel
        self.notepad_pushes = 0
        self.rejected: collections.deque[str] = collections.deque(maxlen=200)  # protocol errors
        self.calls_used = 0
        self._open: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._closing = False
        self._server: asyncio.AbstractServer | None = None
        self._slots = asyncio.Semaphore(max_concurrent_calls)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_concurrent_calls, thread_name_prefix=f"wb-tools-{rollout_id or 'gw'}")

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> "ToolGateway":
        """Bind the socket (replacing a stale one) and make it connectable by the kernel's uid."""
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        if self.socket_path.exists() or self.socket_path.is_symlink():
            if not stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                raise ConfigError(f"{self.socket_path} exists and is not a socket; remove it")
            self.socket_path.unlink()
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=self.max_request_bytes,
            backlog=max(100, self.max_connections))
        os.chmod(self.socket_path, 0o666)  # the kernel runs as another uid; the dir is per rollout
        return self

    async def close(self) -> None:
        """Stop serving, drop open connections, remove the socket file."""
        if self._server is not None:
            self._closing = True
            self._server.close()
            for writer in list(self._open):
                writer.close()  # their handlers see EOF and return
            if self._handlers:
                _, busy = await asyncio.wait(self._handlers, timeout=1.0)
                for task in busy:  # stuck in a tool call: cancel
                    task.cancel()
                await asyncio.gather(*busy, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self.socket_path.is_socket():
            self.socket_path.unlink(missing_ok=True)

    async def __aenter__(self) -> "ToolGateway":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what the agent reads -------------------------------------------------------------------
    def take_calls(self) -> list[ToolCall]:
        """The calls recorded since the last take (call once per step)."""
        calls, self.calls = self.calls, []
        return calls

    @property
    def calls_left(self) -> int:
        return max(0, self.call_budget - self.calls_used)

    def setup_code(self) -> str:
        """The cell that installs this rollout's tools and notepad in the kernel."""
        from workbench.tools.setup_cell import setup_code

        return setup_code(self.registry, token=self.token, call_timeout_s=self.call_timeout_s)

    # -- serving --------------------------------------------------------------------------------
    def _reject(self, why: str) -> None:
        log.debug("gateway %s: %s", self.rollout_id, why)
        self.rejected.append(why)

    async def _send(self, writer: asyncio.StreamWriter, reply: dict[str, Any]) -> None:
        writer.write(encode(reply))
        await asyncio.wait_for(writer.drain(), self.call_timeout_s)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._open) >= self.max_connections:
            self._reject(f"connection refused: {self.max_connections} already open")
            writer.write(encode({"id": None, "ok": False, "error": "too many open connections"}))
            writer.close()
            return
        self._open.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            while True:
                try:
                    line = await asyncio.wait_for(reader.readline(), self.idle_timeout_s)
                except ValueError:  # the line outgrew the reader's limit
                    self._reject(f"request over {self.max_request_bytes} bytes")
                    await self._send(writer, {"id": None, "ok": False, "error":
                                              f"request over {self.max_request_bytes} bytes"})
                    break
                if not line:
                    break
                try:
                    request = decode(line)
                except ValueError:
                    self._reject(f"not a JSON object: {line[:60]!r}")
                    await self._send(writer, {"id": None, "ok": False,
                                              "error": "requests are JSON objects, one per line"})
                    break
                await self._send(writer, await self._dispatch(request))
        except (asyncio.TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            if not self._closing:
                raise
        finally:
            self._open.discard(writer)
            self._handlers.discard(task)  # type: ignore[arg-type]
            writer.close()

    async def _dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        rid = request.get("id")
        if not hmac.compare_digest(str(request.get("token") or ""), self.token):
            self._reject("bad token")
            return {"id": rid, "ok": False, "error": "bad gateway token; tools only work from the "
                    "kernel this gateway's setup cell ran in"}
        op = request.get("op", "call")
        if op == "notepad":
            if not isinstance(request.get("snapshot"), dict):
                return {"id": rid, "ok": False, "error": "notepad snapshot must be an object"}
            self.notepad = request["snapshot"]
            self.notepad_pushes += 1
            return {"id": rid, "ok": True, "result": None}
        if op != "call":
            self._reject(f"unknown op {str(op)[:40]!r}")
            return {"id": rid, "ok": False, "error": f"unknown op {str(op)[:40]!r}; use 'call' or 'notepad'"}
        return await self._call(rid, request)

    async def _call(self, rid: Any, request: dict[str, Any]) -> dict[str, Any]:
        name, args, kwargs = request.get("tool"), request.get("args") or [], request.get("kwargs") or {}
        record = ToolCall(name=str(name)[:200], arguments={"args": args, "kwargs": kwargs},
                          started_at=time.time())
        t0 = time.perf_counter()
        try:
            if not isinstance(name, str) or not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ToolError("a call needs tool: str, args: list, kwargs: object")
            tool = self.registry.get(name)
            if not tool.final:
                if self.calls_used >= self.call_budget:
                    raise ToolError(f"the tool call budget ({self.call_budget} calls) is used up; "
                                    "finish with submit_final_answer(...)")
                self.calls_used += 1
            record.arguments = tool.bind(args, kwargs)
            try:
                result = await asyncio.wait_for(self._run(tool, record.arguments), self.call_timeout_s)
            except asyncio.TimeoutError:
                raise ToolError(f"{name}() timed out after {self.call_timeout_s:g} s") from None
            record.result = self._check_result(tool, result)
            if tool.final:
                self.final_answer = str(next(iter(record.arguments.values()), ""))
            return {"id": rid, "ok": True, "result": record.result}
        except ToolError as exc:
            record.error = str(exc)
        except Exception as exc:  # the tool itself raised: report, never crash the gateway
            record.error = f"{name}() failed: {type(exc).__name__}: {exc}"
        finally:
            record.duration_s = time.perf_counter() - t0
            self.calls.append(record)
        return {"id": rid, "ok": False, "error": record.error}

    async def _run(self, tool: Tool, arguments: dict[str, Any]) -> Any:
        async with self._slots:
            if tool.is_async:
                return await tool.fn(**arguments)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, functools.partial(tool.fn, **arguments))

    def _check_result(self, tool: Tool, result: Any) -> Any:
        limit = self.max_result_chars
        if isinstance(result, str):
            return result if len(result) <= limit else (
                result[:limit] + f"\n… [truncated {len(result) - limit} chars]")
        try:
            size = len(json.dumps(result))
        except (TypeError, ValueError):
            raise ToolError(f"{tool.name}() returned a {type(result).__name__}, which is not JSON-able; "
                            "tools must return str, numbers, bools, None, lists or dicts") from None
        if size > limit:
            raise ToolError(f"{tool.name}() returned {size} chars of JSON (limit {limit}); return less")
        return result
