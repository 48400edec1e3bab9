"""Streaming synthesised from the finished generation: the same ids and text as an unstreamed call.

    async for event in chat_events(completion, include_usage=True): ...   # `data: {...}\\n\\n` lines

The chunks are `openai.types.chat.ChatCompletionChunk`s: the role, the reasoning, the content in
pieces, one delta per tool call (whole arguments), the finish reason, then usage when asked, then
`data: [DONE]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openai.types import Completion
    from openai.types.chat import ChatCompletion

__all__ = ["chat_events", "completion_events"]

PIECE = 64  # characters of content per chunk


def _event(payload: Any) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"


def chat_events(completion: ChatCompletion, include_usage: bool) -> Iterator[str]:
    """The server-sent events of `completion`, as OpenAI streams a chat completion."""
    from openai.types.chat import ChatCompletionChunk

    head = {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
    }
    usage = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}
        body = ChatCompletionChunk.model_validate({**head, "choices": [choice], **usage})
        return _event(body.model_dump(mode="json", exclude_unset=True))

    choice = completion.choices[0]
    message = choice.message
    yield chunk({"role": "assistant", "content": ""})
    reasoning = getattr(message, "reasoning", None)
    if reasoning:
        yield chunk({"reasoning": reasoning})
    text = message.content or ""
    for at in range(0, len(text), PIECE):
        yield chunk({"content": text[at : at + PIECE]})
    for i, call in enumerate(message.tool_calls or []):
        fn = getattr(call, "function", None)
        delta = {"index": i, "id": call.id, "type": "function", "function": fn.model_dump() if fn else {}}
        yield chunk({"tool_calls": [delta]})
    logprobs = choice.logprobs.model_dump(mode="json") if choice.logprobs is not None else None
    yield chunk({}, choice.finish_reason, logprobs)
    if include_usage and completion.usage is not None:
        tail = {**head, "choices": [], "usage": completion.usage.model_dump(mode="json")}
        yield _event(ChatCompletionChunk.model_validate(tail).model_dump(mode="json", exclude_unset=True))
    yield "data: [DONE]\n\n"


def completion_events(completion: Completion, include_usage: bool) -> Iterator[str]:
    """The server-sent events of a text completion: its text, then the finish reason, then usage."""
    body = completion.model_dump(mode="json")
    usage = body.pop("usage", None)
    for choice in body["choices"]:
        text, finish = choice["text"], choice["finish_reason"]
        yield _event({**body, "choices": [{**choice, "text": text, "finish_reason": None, "logprobs": None}]})
        yield _event({**body, "choices": [{**choice, "text": "", "finish_reason": finish}]})
    if include_usage and usage is not None:
        yield _event({**body, "choices": [], "usage": usage})
    yield "data: [DONE]\n\n"
