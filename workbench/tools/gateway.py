"""The host side of the kernel's only way out: an asyncio unix-socket server running host tools.

    registry = ToolRegistry([search_tool(retriever)])
    async with ToolGateway(registry, rollout_dir / "run" / "gateway.sock", rollout_id="r1") as gw:
        await kernel.execute(gw.setup_code())      # installs notepad + tool stubs in the kernel
        await kernel.execute(step_code)            # the model's code calls search(...)
        step.host_calls = gw.take_calls()          # every call, as workbench.trajectory.HostCall
        step.notepad = gw.notepad                  # latest snapshot, pushed by the kernel
        done = gw.final_answer is not None         # set by submit_final_answer(...)

Wire format: `workbench.runtime.protocol` (newline-delimited JSON). Per call: argument check
against the signature, a wall-clock timeout, a result size limit and a per-rollout call budget
(`submit_final_answer` is exempt).

What the kernel may send, it may send on purpose. So:
- every request line gets exactly one reply; garbage, oversize or too-deep lines get an error
  reply and the connection is closed;
- whatever a tool raises (`SystemExit`, `KeyboardInterrupt`, `StopIteration`, any BaseException,
  an exception whose `str()` raises) becomes an error reply; nothing reaches the event loop;
- text follows `workbench.safetext`: a lone surrogate in a result, an error or echoed arguments
  is sent as U+FFFD, and the recorded call holds exactly what was sent (a reply the kernel never
  received says so in the record's `error`);
- open connections are file descriptors of the host process, which every rollout shares: each
  gateway holds at most its share of a process-wide `ConnectionBudget`, an idle connection is closed
  to make room for a new one, and a connection that has not sent a valid token within
  `auth_timeout_s` is closed (`workbench.tools.connections`). A kernel can only ever exhaust its own share.
Sync tools run in this gateway's own thread pool; async tools run on the event loop and must
not block it. Large request lines are parsed off the loop.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import hmac
import logging
import os
import secrets
import socket
import stat
import time
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, ToolError
from workbench.runtime.protocol import NestingError, decode, encode
from workbench.safetext import safe_text
from workbench.tools._invoke import Outcome, invoke_async, invoke_sync
from workbench.tools.connections import SHARED_BUDGET, Conn, ConnectionBudget, OpenConnections
from workbench.tools.registry import Tool, ToolRegistry
from workbench.trajectory import HostCall

log = logging.getLogger(__name__)
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes including the NUL
PARSE_OFF_LOOP_BYTES = 64 * 1024  # request lines above this are decoded in a worker thread
BACKLOG = 1024  # connections waiting to be accepted (beyond it the kernel's connect() blocks)
NOT_A_REQUEST = "requests are JSON objects, one per line"


class ToolGateway:
    """Serves one kernel's host calls on `socket_path`; see the module docstring.

    Limits: `call_timeout_s` per call (and per reply write), `max_request_bytes` per request line,
    `max_result_chars` per result, `call_budget` calls per rollout, `max_concurrent_calls` tools
    running at once. Connections: at most `max_connections`, and never more than this gateway's
    share of `budget` (default: the process-wide `SHARED_BUDGET`); one that has not authenticated
    within `auth_timeout_s`, or is idle for `idle_timeout_s` after it did, is closed.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        socket_path: str | os.PathLike[str],
        *,
        rollout_id: str = "",
        token: str | None = None,
        call_timeout_s: float = 30.0,
        max_request_bytes: int = 1_000_000,
        max_result_chars: int = 20_000,
        call_budget: int = 100,
        max_connections: int = 32,
        max_concurrent_calls: int = 8,
        idle_timeout_s: float = 60.0,
        auth_timeout_s: float = 10.0,
        budget: ConnectionBudget | None = None,
    ) -> None:
        self.registry = registry
        self.socket_path = Path(socket_path)
        if len(os.fsencode(self.socket_path)) > MAX_SOCKET_PATH:
            raise ConfigError(
                f"gateway socket path is {len(str(self.socket_path))} bytes, over the "
                f"{MAX_SOCKET_PATH}-byte unix limit; use a shorter rollout dir"
            )
        self.rollout_id = rollout_id
        self.token = token or secrets.token_hex(16)
        self.call_timeout_s = call_timeout_s
        self.max_request_bytes = max_request_bytes
        self.max_result_chars = max_result_chars
        self.call_budget = call_budget
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.auth_timeout_s = auth_timeout_s
        self.budget = budget if budget is not None else SHARED_BUDGET
        self.calls: list[HostCall] = []
        self.final_answer: str | None = None
        self.notepad: dict[str, Any] | None = None  # latest snapshot pushed by the kernel
        self.notepad_pushes = 0
        self.rejected: collections.deque[str] = collections.deque(maxlen=200)  # protocol errors
        self.calls_used = 0
        self._token = safe_text(self.token).encode()  # as it arrives over the wire
        self._conns = OpenConnections(lambda: self.connection_limit, self._reject)
        self._handlers: set[asyncio.Task[None]] = set()
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._slots = asyncio.Semaphore(max_concurrent_calls)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_concurrent_calls, thread_name_prefix=f"wb-tools-{rollout_id or 'gw'}"
        )
        self._parser = concurrent.futures.ThreadPoolExecutor(  # its own: hung tools cannot block it
            max_workers=1, thread_name_prefix=f"wb-parse-{rollout_id or 'gw'}"
        )

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> ToolGateway:
        """Bind the socket (replacing a stale one) and make it connectable by the kernel's uid."""
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        if self.socket_path.exists() or self.socket_path.is_symlink():
            if not stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                raise ConfigError(f"{self.socket_path} exists and is not a socket; remove it")
            self.socket_path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self.socket_path))
            os.chmod(self.socket_path, 0o666)  # the kernel runs as another uid; the dir is per rollout
            listener.listen(BACKLOG)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._listener, self._loop = listener, asyncio.get_running_loop()
        self._acceptor = asyncio.create_task(self._accept_loop(listener), name=f"gateway-{self.rollout_id}")
        self.budget.join(self)
        return self

    async def close(self) -> None:
        """Stop serving, drop open connections, remove the socket file."""
        self.budget.leave(self)
        if self._acceptor is not None:
            self._closing = True
            self._acceptor.cancel()
            await asyncio.gather(self._acceptor, return_exceptions=True)
            self._acceptor = None
            if self._listener is not None:
                self._listener.close()
            self._conns.close_all()
            if self._handlers:
                _, busy = await asyncio.wait(self._handlers, timeout=1.0)
                for task in busy:  # stuck in a tool call: cancel
                    task.cancel()
                if busy:  # a tool that swallows cancellation is left behind, not waited for
                    await asyncio.wait(busy, timeout=1.0)
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._parser.shutdown(wait=False, cancel_futures=True)
        if self.socket_path.is_socket():
            self.socket_path.unlink(missing_ok=True)

    async def __aenter__(self) -> ToolGateway:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what the agent reads -------------------------------------------------------------------
    def take_calls(self) -> list[HostCall]:
        """The calls recorded since the last take (call once per step)."""
        calls, self.calls = self.calls, []
        return calls

    @property
    def calls_left(self) -> int:
        return max(0, self.call_budget - self.calls_used)

    @property
    def connection_limit(self) -> int:
        """How many connections this gateway may hold open now: its share of the budget."""
        return min(self.max_connections, self.budget.share())

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def setup_code(self) -> str:
        """The cell that installs this rollout's tools and notepad in the kernel."""
        from workbench.tools.setup_cell import setup_code

        return setup_code(self.registry, token=self.token, call_timeout_s=self.call_timeout_s)

    # -- connections ----------------------------------------------------------------------------
    def _reject(self, why: str) -> None:
        log.debug("gateway %s: %s", self.rollout_id, why)
        self.rejected.append(why)

    def budget_changed(self) -> None:
        """Called by the budget, from any thread, when the share may have changed."""
        loop = self._loop
        if loop is None or self._acceptor is None:
            return
        try:
            loop.call_soon_threadsafe(self._conns.limit_changed)
        except RuntimeError:  # that loop is closed
            pass

    async def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            await self._conns.room()
            try:
                await self._accept_one(listener)
            except OSError as exc:  # e.g. EMFILE: the host is out of fds; retry, never die
                log.warning("gateway %s: accept failed: %s", self.rollout_id, exc)
                await asyncio.sleep(0.1)
            except Exception:  # a gateway bug: log it, keep accepting
                log.exception("gateway %s: accept failed", self.rollout_id)
                await asyncio.sleep(0.1)

    async def _accept_one(self, listener: socket.socket) -> None:
        sock, _ = await asyncio.get_running_loop().sock_accept(listener)
        try:  # a kernel sends its request right after connect(): it is usually here already
            waiting = bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:
            waiting = False
        self._conns.shed(self.connection_limit - 1)
        try:
            reader, writer = await asyncio.open_unix_connection(sock=sock, limit=self.max_request_bytes)
        except BaseException:
            sock.close()
            raise
        now = time.monotonic()
        conn = Conn(writer, opened=now, last_active=now, busy=waiting)
        self._conns.add(conn)
        task = asyncio.create_task(self._serve(reader, conn))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _serve(self, reader: asyncio.StreamReader, conn: Conn) -> None:
        try:
            await self._converse(reader, conn)
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            if not self._closing:
                raise
        except Exception:  # a gateway bug: this connection ends, the gateway keeps serving
            log.exception("gateway %s: connection handler failed", self.rollout_id)
        finally:
            self._conns.discard(conn)
            conn.writer.close()

    async def _converse(self, reader: asyncio.StreamReader, conn: Conn) -> None:
        """Read request lines and answer each with one reply, until EOF, a timeout or a protocol error."""
        while not conn.evicted:
            if conn.authed:
                timeout, why = self.idle_timeout_s, f"idle for {self.idle_timeout_s:g} s"
            else:
                timeout = conn.opened + self.auth_timeout_s - time.monotonic()
                why = f"no valid token within {self.auth_timeout_s:g} s"
            try:
                line = await asyncio.wait_for(reader.readline(), max(0.0, timeout))
            except TimeoutError:
                self._reject(f"closed a connection: {why}")
                return
            except ValueError:  # the line outgrew the reader's limit
                self._reject(f"request over {self.max_request_bytes} bytes")
                await self._send(
                    conn.writer, {"id": None, "ok": False, "error": f"request over {self.max_request_bytes} bytes"}
                )
                return
            if not line or conn.evicted:
                return
            conn.busy = True
            reply, record, keep_open = await self._answer(conn, line)
            failed = await self._send(conn.writer, reply)
            if failed and record is not None:
                record.error = (f"{record.error}; " if record.error else "") + f"reply not delivered: {failed}"
            if failed or not keep_open:
                return
            self._conns.went_idle(conn)

    async def _send(self, writer: asyncio.StreamWriter, reply: dict[str, Any]) -> str | None:
        """Write one reply line; returns None once it is sent, else why it was not."""
        try:
            writer.write(encode(reply))
            await asyncio.wait_for(writer.drain(), self.call_timeout_s)
        except TimeoutError:
            return f"the kernel did not read it within {self.call_timeout_s:g} s"
        except (ConnectionError, OSError):
            return "the kernel closed the connection first"
        return None

    # -- requests -------------------------------------------------------------------------------
    async def _answer(self, conn: Conn, line: bytes) -> tuple[dict[str, Any], HostCall | None, bool]:
        """The reply to one request line, the call it recorded (if any), and whether to keep reading."""
        try:
            if len(line) > PARSE_OFF_LOOP_BYTES:
                request = await asyncio.get_running_loop().run_in_executor(self._parser, decode, line)
            else:
                request = decode(line)
        except NestingError as exc:
            self._reject(str(exc))
            return {"id": None, "ok": False, "error": f"{exc}; {NOT_A_REQUEST}"}, None, False
        except ValueError:
            self._reject(f"not a JSON object: {line[:60]!r}")
            return {"id": None, "ok": False, "error": NOT_A_REQUEST}, None, False
        rid, token = request.get("id"), request.get("token")
        if not (isinstance(token, str) and hmac.compare_digest(token.encode(), self._token)):
            self._reject("bad token")
            return (
                {
                    "id": rid,
                    "ok": False,
                    "error": "bad gateway token; tools only work from the kernel this gateway's setup cell ran in",
                },
                None,
                True,
            )
        conn.authed = True
        op = request.get("op", "call")
        if op == "notepad":
            if not isinstance(request.get("snapshot"), dict):
                return {"id": rid, "ok": False, "error": "notepad snapshot must be an object"}, None, True
            self.notepad = request["snapshot"]
            self.notepad_pushes += 1
            return {"id": rid, "ok": True, "result": None}, None, True
        if op != "call":
            self._reject(f"unknown op {str(op)[:40]!r}")
            return (
                {"id": rid, "ok": False, "error": f"unknown op {str(op)[:40]!r}; use 'call' or 'notepad'"},
                None,
                True,
            )
        record = await self._call(request)
        reply = (
            {"id": rid, "ok": True, "result": record.result}
            if record.error is None
            else {"id": rid, "ok": False, "error": record.error}
        )
        return reply, record, True

    async def _call(self, request: dict[str, Any]) -> HostCall:
        """Run one tool call; the record holds exactly the result or error the reply will carry."""
        name, args, kwargs = request.get("tool"), request.get("args") or [], request.get("kwargs") or {}
        record = HostCall(name=str(name)[:200], arguments={"args": args, "kwargs": kwargs}, started_at=time.time())
        t0 = time.perf_counter()
        try:
            if not isinstance(name, str) or not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ToolError("a call needs tool: str, args: list, kwargs: object")
            tool = self.registry.get(name)
            if not tool.final:
                if self.calls_used >= self.call_budget:
                    raise ToolError(
                        f"the tool call budget ({self.call_budget} calls) is used up; "
                        "finish with submit_final_answer(...)"
                    )
                self.calls_used += 1
            record.arguments = tool.bind(args, kwargs)
            try:
                outcome = await asyncio.wait_for(self._run(tool, record.arguments), self.call_timeout_s)
            except TimeoutError:
                raise ToolError(f"{name}() timed out after {self.call_timeout_s:g} s") from None
            record.result, record.error = outcome.result, outcome.error
            if outcome.error is None and tool.final:
                self.final_answer = str(next(iter(record.arguments.values()), ""))
        except ToolError as exc:
            record.error = safe_text(str(exc))
        except asyncio.CancelledError:
            record.error = f"{name}() was cancelled: the gateway closed during the call"
            raise
        except Exception as exc:  # the gateway itself (e.g. its pool shut down): report, keep serving
            record.error = safe_text(f"{name}() could not run: {type(exc).__name__}: {exc}")
        finally:
            record.duration_s = time.perf_counter() - t0
            self.calls.append(record)
        return record

    async def _run(self, tool: Tool, arguments: dict[str, Any]) -> Outcome:
        async with self._slots:
            if tool.is_async:
                return await invoke_async(tool, arguments, self.max_result_chars)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, invoke_sync, tool, arguments, self.max_result_chars)
