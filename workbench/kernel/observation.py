"""`Observation`: what one `execute()` produced, and what the model is shown (`.text`).

    obs = kernel.execute("print('hi'); 1 + 1")
    obs.stdout, obs.result, obs.ok      # ('hi\\n', '2', True)
    obs.text                            # 'hi\\n2'

Long output keeps its head and tail with a marker between; the full text goes to a file in
the rollout dir (`full_output_path`), written as it streams so host memory stays bounded.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml", "image/webp")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _marker(omitted: int, path: str | None) -> str:
    where = f"; full output: {path}" if path else ""
    return f"\n... [{omitted} characters truncated{where}] ...\n"


def _image_size(mime: str, data: str) -> tuple[int, int] | None:
    try:
        head = base64.b64decode(data[:400] + "=" * (-len(data[:400]) % 4), validate=False)
    except (binascii.Error, ValueError):
        return None
    if mime == "image/png" and head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        return struct.unpack(">II", head[16:24])
    if mime == "image/gif" and head[:4] == b"GIF8" and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    return None


def describe_display(item: dict[str, Any]) -> str:
    """A display item as the model sees it: images as `[image/png 640x480]`, else text/plain."""
    for mime in IMAGE_MIMES:
        if mime in item:
            size = _image_size(mime, item[mime]) if isinstance(item[mime], str) else None
            return f"[{mime} {size[0]}x{size[1]}]" if size else f"[{mime}]"
    if "text/plain" in item:
        return str(item["text/plain"])
    return f"[{', '.join(sorted(item)) or 'empty display'}]"


@dataclass
class Observation:
    """One execution's outcome. JSON-able through `to_dict()` / `from_dict()`."""

    stdout: str = ""
    stderr: str = ""
    result: str | None = None  # text/plain of the execute_result
    display: list[dict[str, Any]] = field(default_factory=list)  # {mime: data}; images as base64
    error_name: str | None = None
    error_value: str | None = None
    traceback: list[str] = field(default_factory=list)  # ANSI stripped
    execution_count: int | None = None
    duration_s: float = 0.0
    truncated: bool = False
    timed_out: bool = False
    interrupted: bool = False  # the timeout interrupted the code and the kernel lives on
    killed: bool = False  # the timeout interrupt did not work, so the kernel was killed
    kernel_died: bool = False
    full_output_path: str | None = None
    output_cap: int = 20_000

    @property
    def ok(self) -> bool:
        return self.error_name is None and not (self.timed_out or self.kernel_died)

    @property
    def text(self) -> str:
        """stdout, stderr, displays, result, error, in that order; capped to `output_cap`."""
        parts = [self.stdout, self.stderr]
        parts += [describe_display(d) + "\n" for d in self.display]
        if self.result is not None:
            parts.append(self.result + "\n")
        if self.error_name is not None:
            tb = "\n".join(self.traceback) if self.traceback else f"{self.error_name}: {self.error_value}"
            parts.append(tb + "\n")
        text = "".join(p if p.endswith("\n") or not p else p + "\n" for p in parts if p)
        if len(text) > self.output_cap + 200:
            half = self.output_cap // 2
            text = text[:half] + _marker(len(text) - 2 * half, self.full_output_path) + text[-half:]
        return text.rstrip("\n")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Observation:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class _Stream:
    """Head + bounded tail of one stream; counts what falls between."""

    def __init__(self, half: int) -> None:
        self.half, self.head, self.total = half, "", 0
        self.tail: deque[str] = deque()
        self.tail_len = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.half:
            take = self.half - len(self.head)
            self.head, text = self.head + text[:take], text[take:]
        if not text:
            return
        if len(text) > self.half:
            text = text[-self.half :]
        self.tail.append(text)
        self.tail_len += len(text)
        while self.tail_len - len(self.tail[0]) >= self.half:
            self.tail_len -= len(self.tail.popleft())

    def render(self, path: str | None) -> str:
        tail = "".join(self.tail)
        omitted = self.total - len(self.head) - len(tail)
        if omitted <= 0:
            return self.head + tail
        tail = tail[-self.half :]
        return self.head + _marker(self.total - len(self.head) - len(tail), path) + tail


class OutputCollector:
    """Turns iopub messages of one execution into an `Observation`, spilling long output to disk."""

    def __init__(self, cap: int, spill_path: Path) -> None:
        self.cap, self.spill_path = cap, spill_path
        self.streams = {"stdout": _Stream(cap // 2), "stderr": _Stream(cap // 2)}
        self.early: list[str] = []  # arrival-ordered text until we spill
        self.spill: IO[str] | None = None
        self.obs = Observation(output_cap=cap)
        self.result_truncated = False

    def _text(self, text: str) -> None:
        if self.spill is not None:
            self.spill.write(text)
            return
        self.early.append(text)
        if sum(s.total for s in self.streams.values()) > self.cap:
            self.spill = open(self.spill_path, "w", encoding="utf-8", errors="replace")
            self.spill.writelines(self.early)
            self.early = []

    def feed(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "stream":
            stream = self.streams.get(content.get("name", "stdout"), self.streams["stdout"])
            stream.add(content.get("text", ""))
            self._text(content.get("text", ""))
        elif msg_type == "execute_result":
            result = str(content.get("data", {}).get("text/plain", ""))
            self.result_truncated = len(result) > self.cap
            self.obs.result = _cap(result, self.cap)
            self.obs.execution_count = content.get("execution_count")
        elif msg_type in ("display_data", "update_display_data"):
            self.obs.display.append(dict(content.get("data", {})))
        elif msg_type == "error":
            self.obs.error_name = content.get("ename")
            self.obs.error_value = content.get("evalue")
            self.obs.traceback = [strip_ansi(t) for t in content.get("traceback", [])]
        elif msg_type == "clear_output":
            self.obs.display.clear()
        elif msg_type == "execute_input":
            self.obs.execution_count = content.get("execution_count")

    def finish(self, duration_s: float) -> Observation:
        path = str(self.spill_path) if self.spill is not None else None
        if self.spill is not None:
            self.spill.close()
        self.obs.stdout = self.streams["stdout"].render(path)
        self.obs.stderr = self.streams["stderr"].render(path)
        self.obs.truncated = path is not None or self.result_truncated
        self.obs.full_output_path = path
        self.obs.duration_s = duration_s
        return self.obs


def _cap(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    half = cap // 2
    return text[:half] + _marker(len(text) - 2 * half, None) + text[-half:]
