"""Fixtures for the tool tests: a registry of well- and badly-behaved tools, short socket paths."""

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from workbench.tools import InMemoryRetriever, ToolRegistry, search_tool, tool

DOCS = [
    {"id": "paris", "title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"id": "berlin", "title": "Berlin", "text": "Berlin is the capital of Germany."},
    {"id": "lyon", "title": "Lyon", "text": "Lyon is a city in France, on the Rhone."},
]


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(message: str) -> str:
    """Always fails with `message`."""
    raise RuntimeError(message)


@tool
def nap(seconds: float) -> str:
    """Sleep on the host, then answer."""
    time.sleep(seconds)
    return "rested"


@tool
async def async_echo(text: str, times: int = 1) -> list:
    """Echo text back, asynchronously."""
    await asyncio.sleep(0)
    return [text] * times


@tool
def not_json() -> str:
    """Returns something that cannot cross the wire."""
    return {1, 2}  # type: ignore[return-value]


@tool
def huge(n: int) -> str:
    """Returns n characters."""
    return "x" * n


@pytest.fixture
def registry():
    return ToolRegistry([search_tool(InMemoryRetriever(DOCS)), add, boom, nap, async_echo, not_json, huge])


@pytest.fixture
def sock_dir():
    """A short dir for sockets (pytest's tmp_path can exceed the 107-byte unix path limit)."""
    path = Path(tempfile.mkdtemp(prefix="wbt", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
