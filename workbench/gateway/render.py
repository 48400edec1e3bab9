"""`ChatRenderer`: a chat request (messages + tools) to prompt ids, the way the model's chat template writes it.

    renderer = ChatRenderer(policy.codec)
    ids = renderer.prompt_ids(messages, tools)                 # the full prompt, generation header included
    tail = renderer.ids_after_turn(messages, j, tools)          # the tokens after the turn that closes messages[j]

Message contents never become special tokens: before rendering, each special token's text inside a
content (or a tool call's arguments) is swapped for a marker, the rendering is split at the
template's own special tokens, and each piece of text between them is tokenised with its
original text restored and special tokens off (a tool result cannot forge `<|im_end|>`).

Tools: a template that renders `tools` itself (Hermes / Qwen `<tool_call>` JSON) gets them natively;
any other (the demo's tiny model, SmolLM2's ChatML) gets workbench's text protocol
(`workbench/gateway/prompts/tools.j2`, the same `<tool_call>` blocks): the tool list in the system
message, calls as blocks in the assistant's text, results as `<tool_response>` blocks in a user
message (or in a `tool` message where the template has that role). `tool_protocol` says which.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from workbench.errors import ConfigError
from workbench.policies.base import Codec
from workbench.policies.chat_framing import TOOL_ROLE, TemplatedCodec
from workbench.policies.codec import plain_chat_text
from workbench.templates import prompt_template

__all__ = ["ChatRenderer", "ToolProtocol"]

ToolProtocol = Literal["native", "text"]
"""How tools reach the model: `native` where the chat template renders `tools` itself, `text` for workbench's
`<tool_call>` text protocol."""
_MARK = re.compile("\ufdd0([0-9]+)\ufdd1")
_NATIVE_TOOLS = re.compile(r"\btools\b")  # the template reads the `tools` variable
THINK_PROBE = "<think>\nWBPROBETHINK\n</think>\n\nWBPROBEANSWER"


class ChatRenderer:
    """Renders and tokenises chat requests for one codec (a `TokenizerCodec`, or any `Codec`: plain format)."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        template = codec.chat_template if isinstance(codec, TemplatedCodec) else None
        self.tokenizer = getattr(codec, "tokenizer", None) if template else None
        self.template = template if self.tokenizer is not None else None
        self.specials = self._special_tokens()
        self._special_re = re.compile("|".join(re.escape(s) for s in self.specials)) if self.specials else None
        framing = codec.framing if isinstance(codec, TemplatedCodec) and self.template else None
        self.end_of_turn = framing.end_of_turn if framing is not None else ""
        self.end_of_turn_id = self._special_id(self.end_of_turn) if self.end_of_turn else None
        self.tool_protocol: ToolProtocol = "native" if self.template and _NATIVE_TOOLS.search(self.template) else "text"
        self.tool_role = bool(self.template and TOOL_ROLE.search(self.template))
        llama = self.tool_protocol == "native" and '"parameters"' in (self.template or "")
        self.tool_dialect = "llama3_json" if llama else "hermes"  # how the model writes its calls
        self.rewrites_history = self._rewrites_history()

    # -- rendering ---------------------------------------------------------------------------------
    def text(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None, generate: bool) -> str:
        """The template's rendering of `messages`, special-token text in contents masked."""
        masked = [self._mask_message(m) for m in self._protocol_messages(messages, tools)]
        if self.template is None:
            text = plain_chat_text([{"role": m["role"], "content": m["content"]} for m in masked])
            return text if generate else text[: -len("<|assistant|>\n")]
        native = tools and self.tool_protocol == "native"
        kwargs: dict[str, Any] = {"tools": _mask_value(tools, self._mask)} if native else {}
        try:
            rendered = self.tokenizer.apply_chat_template(  # type: ignore[union-attr]
                masked, tokenize=False, add_generation_prompt=generate, **kwargs
            )
        except Exception as exc:  # jinja2's TemplateError and whatever a template raises itself
            raise ConfigError(f"the chat template cannot render these messages: {exc}") from None
        return str(rendered)

    def prompt_ids(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
        """The full prompt for `messages`, ending with the assistant's header."""
        return self.encode(self.text(messages, tools, True))

    def ids_after_turn(
        self, messages: Sequence[dict[str, Any]], j: int, tools: list[dict[str, Any]] | None
    ) -> list[int] | None:
        """The tokens of the full rendering of `messages` after the end of turn closing assistant
        message `j`; None when the rendering does not show where that turn ends."""
        upto = self.text(messages[: j + 1], tools, False)
        full = self.text(messages, tools, True)
        if not self.end_of_turn:
            return self.encode(full[len(upto) :]) if full.startswith(upto) else None
        count = upto.count(self.end_of_turn)
        at = -1
        for _ in range(count):
            at = full.find(self.end_of_turn, at + 1)
            if at < 0:
                return None
        return self.encode(full[at + len(self.end_of_turn) :]) if count else None

    # -- tokenising ----------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Ids of a masked rendering: the template's special tokens as themselves, all other text with specials off."""
        if self._special_re is None or self.tokenizer is None:
            return self.codec.encode(self._unmask(text))
        ids: list[int] = []
        at = 0
        for match in self._special_re.finditer(text):
            ids += self._plain(text[at : match.start()])
            ids.append(self._special_id(match.group()))
            at = match.end()
        return ids + self._plain(text[at:])

    def _plain(self, text: str) -> list[int]:
        if not text:
            return []
        tokenizer: Any = self.tokenizer
        return list(tokenizer.encode(self._unmask(text), add_special_tokens=False, split_special_tokens=True))

    def _special_id(self, token: str) -> int:
        tokenizer: Any = self.tokenizer
        return int(tokenizer.convert_tokens_to_ids(token))

    def _special_tokens(self) -> list[str]:
        tok = self.tokenizer
        if tok is None:
            return []
        found = set(getattr(tok, "all_special_tokens", []) or [])
        added = getattr(tok, "added_tokens_decoder", {}) or {}
        found.update(str(getattr(t, "content", t)) for t in added.values() if getattr(t, "special", False))
        return sorted((t for t in found if t), key=len, reverse=True)

    def _mask(self, text: str) -> str:
        if self._special_re is None:
            return text
        index = {s: i for i, s in enumerate(self.specials)}
        return self._special_re.sub(lambda m: f"\ufdd0{index[m.group()]}\ufdd1", text)

    def _unmask(self, text: str) -> str:
        return _MARK.sub(lambda m: self.specials[int(m.group(1))], text) if self.specials else text

    def _mask_message(self, m: dict[str, Any]) -> dict[str, Any]:
        out = {**m, "content": self._mask(m.get("content") or "")}
        if m.get("tool_calls"):
            out["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": _mask_value(c["function"]["arguments"], self._mask)}}
                for c in m["tool_calls"]
            ]
        return out

    # -- tools --------------------------------------------------------------------------------------
    def _protocol_messages(
        self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        """`messages` for the template: unchanged under native tools, else in the text protocol."""
        if self.tool_protocol == "native":
            return [{k: v for k, v in m.items() if k != "reasoning"} for m in messages]
        out: list[dict[str, Any]] = []
        for m in messages:
            role, content = m["role"], m.get("content") or ""
            if role == "assistant" and m.get("tool_calls"):
                blocks = "".join(
                    tool_call_block(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]
                )
                content = f"{content}{blocks}" if content else blocks.lstrip("\n")
            if role == "tool" and not self.tool_role:
                block = f"<tool_response>\n{content}\n</tool_response>"
                if out and out[-1].get("_tool_results"):
                    out[-1]["content"] += "\n" + block
                    continue
                out.append({"role": "user", "content": block, "_tool_results": True})
                continue
            out.append({"role": role, "content": content})
        out = [{k: v for k, v in m.items() if k != "_tool_results"} for m in out]
        if tools:
            listing = prompt_template("workbench.gateway", "tools.j2").render(
                tools=[json.dumps(t, ensure_ascii=False) for t in tools]
            )
            if out and out[0]["role"] == "system":
                out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{listing}"}
            else:
                out.insert(0, {"role": "system", "content": listing})
        return out

    def call_opener(self, name: str | None) -> str:
        """The text that opens a tool call in this template's dialect, naming `name` when given: what the gateway
        places after the assistant header (prompt side, never trained on) when `tool_choice` requires a call."""
        key = "parameters" if self.tool_dialect == "llama3_json" else "arguments"
        start = "" if self.tool_dialect == "llama3_json" else "<tool_call>\n"
        if name is None:
            return f'{start}{{"name": "'
        return f'{start}{{"name": {json.dumps(name, ensure_ascii=False)}, "{key}": '

    def _rewrites_history(self) -> bool:
        """Whether the template renders a past assistant turn otherwise than as sent (Qwen3 drops `<think>`)."""
        if self.template is None:
            return False
        history = [
            {"role": "user", "content": "WBPROBEQ1"},
            {"role": "assistant", "content": THINK_PROBE},
            {"role": "user", "content": "WBPROBEQ2"},
        ]
        try:
            return "WBPROBETHINK" not in self.text(history, None, True)
        except ConfigError:
            return False


def tool_call_block(name: str, arguments: Any) -> str:
    """One call in the text protocol: `\\n<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>`."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"\n<tool_call>\n{body}\n</tool_call>"


def _mask_value(value: Any, mask: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask(k): _mask_value(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(v, mask) for v in value]
    return value
