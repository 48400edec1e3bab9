"""Which recorded call a chat request continues: the token-faithful multi-turn rule's lookup.

A request's messages M continue call c's choice R when M = c's messages + [a] + N, with the same
`tools`, a equivalent to R and N non-empty with no assistant message. So a is M's last assistant
message, and one lookup of the digest of M[: a + 1] finds c. Equivalence is on normalised keys:
content stripped (`None` = ""), tool calls as (name, parsed arguments) in order, ids and names
ignored; reasoning is not in the key but, when the harness sends it back, it must equal R's.

    index = CallIndex()
    index.add(node)                          # after each call
    found = index.find(messages, tools_key)  # .node (the parent) and .turn (a's index), or .reason
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.gateway.replies import ChatReply
from workbench.gateway.wire import parsed_arguments
from workbench.trajectory import Step

__all__ = ["CallIndex", "CallNode", "ForkReason", "Match", "message_digests", "reply_message", "tools_key"]

ForkReason = Literal["no_parent", "tools_changed", "history_edited", "assistant_edited", "template_rewrites_history"]
"""Why a gateway call starts a new segment instead of continuing a recorded one: no parent call, the tools changed, an
earlier message or an assistant reply was edited, or the template rewrites history."""
FORK_REASONS: tuple[ForkReason, ...] = (
    "no_parent",
    "tools_changed",
    "history_edited",
    "assistant_edited",
    "template_rewrites_history",
)
"""Every `ForkReason`, in a fixed order (for counts and reports)."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _key(m: dict[str, Any]) -> str:
    calls = [[c["function"]["name"], _parsed(c["function"]["arguments"])] for c in m.get("tool_calls") or []]
    return _canonical([m["role"], (m.get("content") or "").strip(), calls])


def _parsed(arguments: Any) -> Any:
    return parsed_arguments(arguments) if isinstance(arguments, str) else arguments


def message_digests(messages: Sequence[dict[str, Any]]) -> list[str]:
    """digests[k] identifies messages[:k] (k = 0 .. len): a hash chain over the normalised keys."""
    out = [""]
    for m in messages:
        out.append(hashlib.sha256((out[-1] + _key(m)).encode()).hexdigest())
    return out


def tools_key(tools: list[dict[str, Any]] | None) -> str:
    return hashlib.sha256(_canonical(tools or []).encode()).hexdigest()


def reply_message(reply: ChatReply) -> dict[str, Any]:
    """The assistant message a reply is (as a chat template takes it)."""
    calls = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls]
    return {"role": "assistant", "content": reply.content or "", "tool_calls": calls}


@dataclass
class CallNode:
    """One recorded call's choice, kept in memory while its rollout is open."""

    step: Step
    prompt_ids: list[int]
    sampled_ids: list[int]
    reasoning: str | None
    tools: str  # tools_key of the request
    messages: str  # digest of the request's messages
    with_reply: str  # digest of the messages + the reply


@dataclass
class Match:
    node: CallNode | None = None
    turn: int = -1  # index of the assistant message that stands for node's reply
    reason: ForkReason | None = None


@dataclass
class CallIndex:
    """The recorded calls of one rollout, by the digest of the history each one's reply ends."""

    _by_reply: dict[tuple[str, str], CallNode] = field(default_factory=dict)
    _by_messages: dict[str, list[str]] = field(default_factory=dict)  # messages digest -> tools keys

    def __len__(self) -> int:
        return len(self._by_reply)

    def add(self, node: CallNode) -> None:
        self._by_reply[(node.tools, node.with_reply)] = node  # the latest of equal histories wins
        self._by_messages.setdefault(node.messages, []).append(node.tools)

    def find(self, messages: Sequence[dict[str, Any]], tools: str) -> Match:
        """The deepest recorded call `messages` continues, or why there is none."""
        turn = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
        if turn < 0:
            return Match(reason="no_parent")
        if turn == len(messages) - 1:
            return Match(reason="history_edited")  # nothing after the assistant turn: no new message to frame
        digests = message_digests(messages[: turn + 1])
        node = self._by_reply.get((tools, digests[turn + 1]))
        sent = (messages[turn].get("reasoning") or "").strip()
        if node is not None and (not sent or sent == (node.reasoning or "").strip()):
            return Match(node, turn)
        seen = self._by_messages.get(digests[turn], [])
        if node is not None or tools in seen:
            return Match(reason="assistant_edited")
        return Match(reason="tools_changed" if seen else "history_edited")
