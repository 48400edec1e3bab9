"""The chat completions wire format as the model gateway reads it: request models (every field a
`ChatRequest` cannot honour is a 400 naming it), messages flattened to the dicts a chat template
takes, and errors in OpenAI's shape.

    req = parse_request(ChatRequest, raw_body)      # BadRequest (400) naming the field on bad input
    messages = [template_message(m) for m in req.messages]

OpenAI's own request types are `TypedDict`s (`openai.types.chat.CompletionCreateParams`); the tests
cross-check that every field a `ChatRequest` takes is one of theirs.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.webio import BadRequest

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "RequestRefused",
    "ToolSpec",
    "error_body",
    "message_text",
    "template_message",
]


class RequestRefused(BadRequest):
    """A request the gateway answers with an OpenAI-shaped error: `status`, `param` (the field), `code`."""

    def __init__(self, message: str, param: str | None = None, *, status: int = 400, code: str | None = None):
        super().__init__(message, status)
        self.param, self.code = param, code


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionSpec(_Open):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolSpec(_Strict):
    """One function tool the harness declares (`tools=[{"type": "function", "function": {...}}]`)."""

    type: Literal["function"]
    function: FunctionSpec


class CallFunction(_Open):
    name: str
    arguments: str = ""


class ToolCallIn(_Open):
    id: str | None = None
    type: Literal["function"] = "function"
    function: CallFunction


class ChatMessage(_Open):
    """One message as a harness sends it; unknown keys are kept (SDKs add their own) and ignored."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class StreamOptions(_Strict):
    include_usage: bool = False
    include_obfuscation: bool | None = None


class ChatRequest(_Strict):
    """A `/v1/chat/completions` body. Labels that change nothing (`user`, `metadata`, `store`,
    `service_tier`, `parallel_tool_calls`) are accepted; `n` > 1 in training and non-text response formats are
    refused. Each of n choices is a Step; the harness continues with one, and the others are branches."""

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[ToolSpec] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: int = 1
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    service_tier: str | None = None

    def refuse_unsupported(self, training: bool = False) -> None:
        """A 400 naming the first field this request sets that the gateway cannot honour."""
        if training and self.n != 1:
            raise BadRequest("n: n > 1 is refused in training (the group size is the trainer's); send n=1")
        fmt = (self.response_format or {}).get("type", "text")
        choice = self.tool_choice
        refused = {
            "n": (not 1 <= self.n <= 16, "n must be between 1 and 16"),
            "stream": (self.stream and self.n != 1, "streaming serves one choice: send n=1 with stream=true"),
            "response_format": (fmt != "text", f"response_format {fmt!r} is not supported; ask for JSON in the prompt"),
            "tool_choice": (
                choice not in (None, "auto", "none") and not self.tools,
                "tool_choice asks for a tool call but the request declares no tools",
            ),
            "logit_bias": (bool(self.logit_bias), "logit_bias is not supported by the model gateway"),
            "reasoning_effort": (self.reasoning_effort is not None, "reasoning_effort is not supported; remove it"),
        }
        for name, (bad, why) in refused.items():
            if bad:
                raise BadRequest(f"{name}: {why}")
        if self.top_logprobs and not self.logprobs:
            raise BadRequest("top_logprobs: set logprobs=true to ask for top_logprobs")
        if self.top_logprobs is not None and not 0 <= self.top_logprobs <= 20:
            raise BadRequest(f"top_logprobs must be between 0 and 20, got {self.top_logprobs}")

    @property
    def required_call(self) -> tuple[bool, str | None]:
        """Whether `tool_choice` requires a call ("required", or a named function), and the name it requires."""
        choice = self.tool_choice
        if choice in (None, "auto", "none"):
            return False, None
        if choice == "required":
            return True, None
        function = choice.get("function") if isinstance(choice, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or (isinstance(choice, dict) and choice.get("type", "function") != "function"):
            raise BadRequest(
                'tool_choice: send "auto", "none", "required" or {"type": "function", "function": {"name": NAME}}'
            )
        if name not in {t.function.name for t in self.tools or []}:
            raise BadRequest(f"tool_choice: no tool named {name!r} among the request's tools")
        return True, name

    @property
    def stop_list(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


def message_text(content: str | list[dict[str, Any]] | None, where: str) -> str:
    """A message content as text: a string, or the text parts of a list joined; other parts are a 400."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for i, part in enumerate(content):
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise BadRequest(
                f"{where}.content[{i}]: only text parts are supported (got type {part.get('type')!r}); "
                "send images or audio to a multimodal server"
            )
        parts.append(part["text"])
    return "".join(parts)


def parsed_arguments(arguments: str) -> Any:
    """A tool call's arguments as a value (the JSON they hold; the string itself when not JSON)."""
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments


def template_message(m: ChatMessage, index: int) -> dict[str, Any]:
    """`m` as a chat template takes it: text content, tool calls with parsed arguments, reasoning kept."""
    role = "system" if m.role == "developer" else m.role
    out: dict[str, Any] = {"role": role, "content": message_text(m.content, f"messages[{index}]")}
    if m.name is not None:
        out["name"] = m.name
    if m.role == "tool":
        out["tool_call_id"] = m.tool_call_id or ""
    if m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id or "",
                "type": "function",
                "function": {"name": c.function.name, "arguments": parsed_arguments(c.function.arguments)},
            }
            for c in m.tool_calls
        ]
    reasoning = m.reasoning_content if m.reasoning_content is not None else m.reasoning
    if reasoning is not None:
        out["reasoning"] = reasoning
    return out


def error_body(message: str, status: int = 400, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""
    kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}.get(
        status, "invalid_request_error" if status < 500 else "server_error"
    )
    return {"error": {"message": message, "type": kind, "param": param, "code": code or str(status)}}
