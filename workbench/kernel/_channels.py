"""The client side of one kernel's wire protocol: shell, control and iopub over zmq ipc.

One reader task per socket routes replies to futures by parent msg_id and iopub messages to
the `OutputCollector` of the execution they belong to. Messages are HMAC-checked and only
the parts needed are JSON-decoded.

Whatever the kernel sends, a reader never stops: bytes that are not UTF-8 and lone surrogates
become U+FFFD (`workbench.safetext`); a message that cannot be read at all is shown in the
execution's stderr (an output) or answers its request with an error reply, never dropped in silence.
Outgoing messages are packed the same way (`workbench.runtime.wire.pack`), so code holding a
lone surrogate still reaches the kernel, as U+FFFD.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.session import Session

from workbench.kernel._process import CHANNELS, context, decode
from workbench.kernel.observation import OutputCollector
from workbench.runtime.wire import PACKER
from workbench.safetext import safe_bytes, safe_json

_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]")  # JSON text that decodes to a surrogate


def loads(raw: bytes) -> Any:
    """One JSON message part, decoded by the safetext rule (raises ValueError if not JSON)."""
    value = json.loads(safe_bytes(raw))
    return safe_json(value) if _ESCAPED_SURROGATE.search(raw) else value


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # an exception whose __str__ fails
        return type(exc).__name__


def execute_content(code: str, silent: bool = False) -> dict[str, Any]:
    """An execute_request's content, as every cell is sent."""
    return {
        "code": code,
        "silent": silent,
        "store_history": not silent,
        "user_expressions": {},
        "allow_stdin": False,
        # one cell at a time, so nothing is queued to abort; True lets ipykernel 7 abort
        # the next cell when it races the kernel's "stop aborting" message after an error
        "stop_on_error": False,
    }


class Channels:
    def __init__(self, key: str) -> None:
        self.key = key.encode()
        self.session = Session(key=self.key, signature_scheme="hmac-sha256", username="workbench", packer=PACKER)
        self.replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.collectors: dict[str, tuple[OutputCollector, asyncio.Future[None]]] = {}
        self.socks: dict[str, zmq.asyncio.Socket] = {}
        self.readers: list[asyncio.Task[None]] = []
        self.welcome: asyncio.Future[None] | None = None  # any iopub message: subscription is live

    def connect(self, host_ip: str) -> None:
        ctx = context()
        for name, kind in (("shell", zmq.DEALER), ("control", zmq.DEALER), ("iopub", zmq.SUB)):
            sock = ctx.socket(kind)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RECONNECT_IVL, 5)  # the ipc file appears ~0.5 s after launch
            if kind == zmq.DEALER:
                sock.setsockopt(zmq.IDENTITY, self.session.bsession)
            else:
                sock.setsockopt(zmq.SUBSCRIBE, b"")
            sock.connect(f"ipc://{host_ip}-{CHANNELS[name]}")
            self.socks[name] = sock
        self.welcome = asyncio.get_running_loop().create_future()
        self.readers = [asyncio.create_task(self._read(n)) for n in ("shell", "control", "iopub")]

    async def request(
        self, channel: str, msg_type: str, content: dict[str, Any], collector: OutputCollector | None = None
    ) -> tuple[str, asyncio.Future[dict[str, Any]], asyncio.Future[None]]:
        """Send a request; returns (msg_id, reply future, iopub-idle future)."""
        loop = asyncio.get_running_loop()
        msg = self.session.msg(msg_type, content)
        msg_id = msg["header"]["msg_id"]
        reply, idle = loop.create_future(), loop.create_future()
        self.replies[msg_id] = reply
        if collector is not None:
            self.collectors[msg_id] = (collector, idle)
        await self.socks[channel].send_multipart(self.session.serialize(msg))
        return msg_id, reply, idle

    def forget(self, msg_id: str) -> None:
        self.replies.pop(msg_id, None)
        self.collectors.pop(msg_id, None)

    async def _read(self, name: str) -> None:
        sock = self.socks[name]
        while True:
            try:
                frames = await sock.recv_multipart()
            except (zmq.ZMQError, asyncio.CancelledError):
                return
            try:
                self._route(name, frames)
            except Exception:
                continue

    def _route(self, name: str, frames: list[bytes]) -> None:
        msg = decode(frames, self.key)
        if msg is None:
            return  # malformed or wrongly signed: not from our kernel
        header, parent_header, content = msg
        try:
            parent = loads(parent_header)
        except Exception:
            return  # belongs to no request we can name
        parent_id = parent.get("msg_id") if isinstance(parent, dict) else None
        if not isinstance(parent_id, str):
            parent_id = None
        if name != "iopub":
            fut = self.replies.pop(parent_id, None) if parent_id is not None else None
            if fut is not None and not fut.done():
                fut.set_result(self._reply(content))
            return
        if self.welcome is not None and not self.welcome.done():
            self.welcome.set_result(None)
        entry = self.collectors.get(parent_id) if parent_id is not None else None
        if entry is None:
            return
        collector, idle = entry
        try:
            head = loads(header)
            mtype = head.get("msg_type") if isinstance(head, dict) else None
            if mtype == "status":
                if b'"idle"' in content and not idle.done():
                    idle.set_result(None)
                return
            collector.feed(str(mtype), loads(content))
        except Exception as exc:
            collector.feed(
                "stream",
                {
                    "name": "stderr",
                    "text": (f"[workbench: an output message from the kernel could not be read ({_describe(exc)})]\n"),
                },
            )

    @staticmethod
    def _reply(content: bytes) -> dict[str, Any]:
        try:
            reply = loads(content)
        except Exception as exc:
            reply = None
            why = _describe(exc)
        else:
            why = f"not a JSON object: {type(reply).__name__}"
        if isinstance(reply, dict):
            return reply
        return {
            "status": "error",
            "ename": "MalformedReply",
            "evalue": f"the kernel's reply could not be read ({why})",
            "traceback": [],
        }

    def close(self) -> None:
        for task in self.readers:
            task.cancel()
        for sock in self.socks.values():
            sock.close(linger=0)
