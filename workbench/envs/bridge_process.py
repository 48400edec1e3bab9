"""`BridgeProcess`: a child process that answers JSON-line requests by id (the verifiers bridge's client side).

    bridge = BridgeProcess([python, "-P", "verifiers_bridge.py", "--env", "arith-env"], what="verifiers:arith-env")
    result = await bridge.request("reset", session="s1", args={"seed": 0})    # from any event loop
    bridge.close()

The child's first line (id 0) says it is ready, or why not; after that each request gets the answer with
its id, in any order, so episodes on several event loops and threads share one child. A reader thread
resolves each answer's future; the child's stderr is kept (its last lines) for the errors raised here.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import subprocess
import threading
from concurrent.futures import Future, InvalidStateError
from typing import IO, Any

from workbench.envs.verifiers_bridge import decode_line, encode_line
from workbench.errors import ConfigError

READY_TIMEOUT_S = 300.0  # loading an environment imports verifiers and builds its dataset


class BridgeError(RuntimeError):
    """A request the bridge answered with a failure (its own words), or a bridge that has exited."""


class BridgeProcess:
    """One child speaking the bridge protocol on stdin/stdout; `what` names it in errors."""

    def __init__(self, argv: list[str], *, what: str, fix: str = "", ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self.what = what
        self._reading = True
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._pending: dict[int, Future[dict[str, Any]]] = {0: Future()}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.process.stdout is not None and self.process.stderr is not None
        threading.Thread(target=self._read_answers, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.process.stderr,), daemon=True).start()
        try:
            self.hello = self._pending[0].result(timeout=ready_timeout_s)
        except Exception as exc:
            self.close()
            raise ConfigError(f"{what} did not start: {exc}{self._stderr_hint()}{fix}") from None

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request; its answer's `result`, or a `BridgeError` with the bridge's own words."""
        answer: Future[dict[str, Any]] = Future()
        with self._lock:
            if not self._reading:
                raise BridgeError(f"{self.what} has exited{self._stderr_hint()}")
            number = next(self._ids)
            self._pending[number] = answer
            stdin = self.process.stdin
            try:
                assert stdin is not None
                stdin.write(encode_line({"id": number, "op": op, **fields}))
                stdin.flush()
            except (OSError, ValueError) as exc:
                self._pending.pop(number, None)
                raise BridgeError(f"{self.what} has stopped ({exc}){self._stderr_hint()}") from None
        return await asyncio.wrap_future(answer)

    def close(self) -> None:
        """Close the child's stdin (it exits), then kill it if it lingers."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _read_answers(self, stdout: IO[bytes]) -> None:
        with stdout:
            for line in stdout:
                self._answer(line)
        with self._lock:  # the child exited: everything still waiting fails with what it said last
            waiting, self._pending, self._reading = list(self._pending.values()), {}, False
        for answer in waiting:
            _settle(answer, BridgeError(f"{self.what} has exited{self._stderr_hint()}"))

    def _answer(self, line: bytes) -> None:
        try:
            message = decode_line(line)
        except ValueError:
            return
        number = message.get("id")
        with self._lock:
            answer = self._pending.pop(number if isinstance(number, int) else -1, None)
        if answer is not None and message.get("ok"):
            _settle(answer, dict(message.get("result") or {}))
        elif answer is not None:
            _settle(answer, BridgeError(str(message.get("error"))))

    def _read_stderr(self, stderr: IO[bytes]) -> None:
        with stderr:
            for line in stderr:
                self.stderr_tail.append(line.decode("utf-8", errors="replace").rstrip())

    def _stderr_hint(self) -> str:
        lines = [line for line in self.stderr_tail if line.strip()][-5:]
        return ("; its last words: " + " | ".join(lines)) if lines else ""


def _settle(answer: Future[dict[str, Any]], outcome: dict[str, Any] | Exception) -> None:
    """Resolve `answer` unless its waiter gave up (a cancelled episode) meanwhile."""
    try:
        if isinstance(outcome, Exception):
            answer.set_exception(outcome)
        else:
            answer.set_result(outcome)
    except InvalidStateError:
        pass


__all__ = ["READY_TIMEOUT_S", "BridgeError", "BridgeProcess"]
