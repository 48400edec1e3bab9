"""The client side of one kernel's wire protocol: shell, control and iopub over zmq ipc.

One reader task per socket routes replies to futures by parent msg_id and iopub messages to
the `OutputCollector` of the execution they belong to. Messages are HMAC-checked and only
the parts needed are JSON-decoded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.session import Session

from workbench.kernel._process import CHANNELS, context, decode
from workbench.kernel.observation import OutputCollector


class Channels:
    def __init__(self, key: str) -> None:
        self.key = key.encode()
        self.session = Session(key=self.key, signature_scheme="hmac-sha256", username="workbench")
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

    async def request(self, channel: str, msg_type: str, content: dict[str, Any],
                      collector: OutputCollector | None = None) -> tuple[str, asyncio.Future[dict[str, Any]], asyncio.Future[None]]:
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
            msg = decode(frames, self.key)
            if msg is None:
                continue  # malformed or wrongly signed: ignore
            header, parent_header, content = msg
            parent = json.loads(parent_header).get("msg_id")
            if name != "iopub":
                fut = self.replies.pop(parent, None)
                if fut is not None and not fut.done():
                    fut.set_result(json.loads(content))
                continue
            if self.welcome is not None and not self.welcome.done():
                self.welcome.set_result(None)
            entry = self.collectors.get(parent)
            if entry is None:
                continue
            collector, idle = entry
            mtype = json.loads(header)["msg_type"]
            if mtype == "status":
                if b'"idle"' in content and not idle.done():
                    idle.set_result(None)
            else:
                collector.feed(mtype, json.loads(content))

    def close(self) -> None:
        for task in self.readers:
            task.cancel()
        for sock in self.socks.values():
            sock.close(linger=0)
