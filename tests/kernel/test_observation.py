"""Observation rendering and the streaming output cap (no kernel needed)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

from workbench.kernel.observation import Observation, OutputCollector, describe_display, strip_ansi


def tiny_png(w: int, h: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x00" * w * 3 for _ in range(h))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def test_text_orders_parts_and_placeholders_images():
    obs = Observation(
        stdout="out\n",
        stderr="warn\n",
        result="42",
        display=[{"image/png": tiny_png(640, 480), "text/plain": "<Figure>"}, {"image/svg+xml": "<svg/>"}],
    )
    assert obs.text == "out\nwarn\n[image/png 640x480]\n[image/svg+xml]\n42"
    assert obs.ok
    assert describe_display({"text/html": "<b>x</b>"}) == "[text/html]"


def test_error_and_flags():
    obs = Observation(
        error_name="ZeroDivisionError",
        error_value="division by zero",
        traceback=["Traceback ...", "ZeroDivisionError: division by zero"],
    )
    assert not obs.ok and obs.text.endswith("ZeroDivisionError: division by zero")
    assert not Observation(timed_out=True).ok and not Observation(kernel_died=True).ok
    assert strip_ansi("\x1b[0;31mred\x1b[0m") == "red"


def test_round_trip_is_json(tmp_path: Path):
    obs = Observation(
        stdout="a",
        display=[{"image/png": tiny_png(2, 3)}],
        execution_count=3,
        truncated=True,
        full_output_path=str(tmp_path / "x.txt"),
    )
    again = Observation.from_dict(json.loads(json.dumps(obs.to_dict())))
    assert again == obs and again.text == obs.text


def test_streaming_cap_keeps_head_tail_and_spills_everything(tmp_path: Path):
    spill = tmp_path / "out.txt"
    col = OutputCollector(cap=1000, spill_path=spill)
    chunks = [f"line {i:05d}\n" for i in range(5000)]
    for i, c in enumerate(chunks):
        col.feed("stream", {"name": "stderr" if i == 2500 else "stdout", "text": c})
    obs = col.finish(0.1)
    assert obs.truncated and obs.full_output_path == str(spill)
    assert spill.read_text() == "".join(chunks)  # arrival order, nothing lost
    assert obs.stdout.startswith("line 00000") and obs.stdout.endswith("line 04999\n")
    assert "characters truncated" in obs.stdout and str(spill) in obs.stdout
    assert len(obs.stdout) < 1300 and len(obs.text) < 1500
    assert obs.stderr == "line 02500\n"


def test_huge_result_is_capped(tmp_path: Path):
    col = OutputCollector(cap=100, spill_path=tmp_path / "o.txt")
    col.feed("execute_result", {"data": {"text/plain": "9" * 10_000}, "execution_count": 1})
    obs = col.finish(0.0)
    assert obs.truncated and len(obs.result or "") < 200 and obs.execution_count == 1


def test_small_output_is_untouched(tmp_path: Path):
    col = OutputCollector(cap=1000, spill_path=tmp_path / "o.txt")
    col.feed("stream", {"name": "stdout", "text": "hi\n"})
    obs = col.finish(0.0)
    assert obs.stdout == "hi\n" and not obs.truncated and not (tmp_path / "o.txt").exists()
