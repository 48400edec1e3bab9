"""A sampled text as a chat reply: `<think>` text as `reasoning`, `<tool_call>` blocks as tool calls.

    reply = parse_reply('<think>look</think>\\n<tool_call>\\n{"name": "f", "arguments": {"x": 1}}\\n</tool_call>', True)
    reply.reasoning, reply.content, reply.tool_calls   # "look", None, [ChatToolCall("f", '{"x": 1}', "call_...")]

One parser for both tool protocols: Hermes / Qwen templates and workbench's text protocol write the
same blocks. A block whose JSON does not parse as {"name", "arguments"} stays in the content.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field

__all__ = ["ChatReply", "ChatToolCall", "parse_reply"]

_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>", re.DOTALL)


@dataclass(frozen=True)
class ChatToolCall:
    """A model's function call as a chat reply carries it: `arguments` is a JSON string."""

    name: str
    arguments: str
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ChatReply:
    """A sampled text as a chat reply: `content`, the `<think>` text as `reasoning`, `tool_calls` (`parse_reply`)."""

    content: str | None
    reasoning: str | None = None
    tool_calls: tuple[ChatToolCall, ...] = ()


def parse_reply(text: str, tools: bool, dialect: str = "hermes") -> ChatReply:
    """Split `text`; tool calls are looked for only when the request declared `tools`. `dialect` "llama3_json":
    Llama 3.x's calls, a reply that is only `{"name": ..., "parameters": {...}}` objects (`;`-separated)."""
    reasoning = None
    think = _THINK.match(text)
    if think is not None and ("<think>" in text[: think.end()] or "</think>" in text):
        reasoning, text = think.group(1).strip(), text[think.end() :]
    calls: list[ChatToolCall] = []
    if tools and dialect == "llama3_json":
        found = _llama_calls(text)
        if found:
            return ChatReply(None, reasoning, tuple(found))
    elif tools:
        kept, at = [], 0
        for match in _CALL.finditer(text):
            call = _call(match.group(1))
            if call is None:
                continue
            kept.append(text[at : match.start()])
            calls.append(call)
            at = match.end()
        text = "".join(kept) + text[at:]
    content = text.strip() if calls or reasoning is not None else text
    return ChatReply(content if content or not calls else None, reasoning, tuple(calls))


def _call(body: str) -> ChatToolCall | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    args = value.get("arguments", value.get("parameters", {}))
    return ChatToolCall(value["name"], args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))


def _llama_calls(text: str) -> list[ChatToolCall]:
    """Llama 3.x's JSON calls: the whole reply (after an optional `<|python_tag|>`) is one or more call objects."""
    body = text.strip().removeprefix("<|python_tag|>").strip()
    if not body.startswith("{"):
        return []
    calls = [_call(part) for part in (body.split(";") if ";" in body else [body])]
    return [c for c in calls if c is not None] if all(calls) else []
