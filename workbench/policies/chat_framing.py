"""`ChatFraming`: the text a model's chat template puts around an episode's turns, derived from it.

The agent never re-renders history: it keeps the sampled ids and appends, after each turn, the
framing the template itself would write there. That framing is found by rendering small message
lists through the template and taking the difference around sentinel contents:

    render([system S, user T, assistant A, user-or-tool O], add_generation_prompt=True)
      = ... A <after_assistant> O <after_observation>     # end of turn, header ... footer, next header
    render([system S, user T], add_generation_prompt=True)
      = ... T <after_task>                                 # footer, assistant header

so it works for any template (ChatML, Llama-3 headers, templates with a `tool` role, ...). The
end-of-turn token is the first special token of `after_assistant` (`<|im_end|>`, `<|eot_id|>`).

`CONTINUATION` is the framing of tokenizers without a chat template (and of workbench's own tiny
models): no framing at all, each observation continues the model's text.

    framing = ChatFraming.derive(render, special_tokens=["<|im_end|>", "<|im_start|>"])
    framing.after_assistant    # "<|im_end|>\\n<|im_start|>user\\n"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from workbench.errors import ConfigError
from workbench.policies.base import Codec

Render = Callable[[Sequence[dict[str, str]], bool], str]  # (messages, add_generation_prompt) -> text
FramingMode = Literal["auto", "template", "continuation"]

SYSTEM_PROBE = "WBPROBESYSTEM"
TASK_PROBE = "WBPROBETASK"
ASSISTANT_PROBE = "WBPROBEASSISTANT"
OBSERVATION_PROBE = "WBPROBEOBSERVATION"
PADDED_PROBE = f"\n {OBSERVATION_PROBE} \n"  # a template that trims content drops the padding
TOOL_ROLE = re.compile(r"""["']tool["']""")  # the template handles a tool role itself


@dataclass(frozen=True)
class ChatFraming:
    """What a chat template writes between an episode's messages (all "" for `CONTINUATION`)."""

    observation_role: str  # "user" or "tool" ("" for CONTINUATION)
    after_assistant: str  # end of the assistant turn, then the observation's header
    after_observation: str  # the observation's footer, then the next assistant header
    after_task: str  # the task message's footer, then the assistant header
    end_of_turn: str  # the special token that ends an assistant turn ("" when none)
    trims_content: bool = False  # the template strips whitespace around message contents

    @property
    def is_continuation(self) -> bool:
        return not self.observation_role

    def content(self, text: str) -> str:
        """A message content as this template renders it (leading newlines dropped; stripped when it trims)."""
        if self.is_continuation:
            return text
        return text.strip() if self.trims_content else text.lstrip("\n")

    def lead(self, ended_turn: bool) -> str:
        """The text between a turn's sampled ids and the observation's content; `ended_turn`: the sample
        already ends with the end-of-turn token, so the template's copy of it is not added again."""
        if ended_turn and self.end_of_turn:
            return self.after_assistant.split(self.end_of_turn, 1)[1]
        return self.after_assistant

    @classmethod
    def derive(cls, render: Render, special_tokens: Collection[str], template_source: str = "") -> ChatFraming:
        """The framing of the template behind `render`; `template_source` decides whether it has a `tool` role."""
        opening = render(_opening(), True)
        after_task = _after(opening, TASK_PROBE, "the task")
        errors = []
        for role in ("tool", "user") if TOOL_ROLE.search(template_source) else ("user",):
            try:
                text = render([*_opening(), {"role": "assistant", "content": ASSISTANT_PROBE},
                               {"role": role, "content": PADDED_PROBE}], True)  # fmt: skip
            except Exception as exc:  # a template may refuse a role: try the next
                errors.append(f"{role}: {exc}")
                continue
            trims = PADDED_PROBE not in text
            probe = OBSERVATION_PROBE if trims else PADDED_PROBE
            if probe not in text or ASSISTANT_PROBE not in text:
                errors.append(f"{role}: the content does not appear in the rendering")
                continue
            start = text.index(probe)
            after_assistant = text[text.index(ASSISTANT_PROBE) + len(ASSISTANT_PROBE) : start]
            after_observation = text[start + len(probe) :]
            eot = _first_special(after_assistant, special_tokens)
            return cls(role, after_assistant, after_observation, after_task, eot, trims)
        raise ConfigError(
            "this chat template cannot frame an agent episode (system, user, assistant, then an observation "
            f"message): {'; '.join(errors)}. Use framing='continuation' in the AgentConfig, or fix the template"
        )


CONTINUATION = ChatFraming("", "", "", "", "")


def _opening() -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM_PROBE}, {"role": "user", "content": TASK_PROBE}]


def _after(text: str, probe: str, what: str) -> str:
    if probe not in text:
        raise ConfigError(f"the chat template drops {what}'s content; use framing='continuation' or fix the template")
    return text[text.index(probe) + len(probe) :]


def _first_special(text: str, special_tokens: Collection[str]) -> str:
    """The special token that occurs first in `text` ("" when none does)."""
    found = [(text.index(t), -len(t), t) for t in special_tokens if t and t in text]
    return min(found)[2] if found else ""


@runtime_checkable
class TemplatedCodec(Codec, Protocol):
    """A codec that knows its chat template: the rendered text and the framing derived from it."""

    @property
    def chat_template(self) -> str | None: ...

    @property
    def framing(self) -> ChatFraming | None:
        """The template's framing; None when the tokenizer has no chat template."""
        ...

    def chat_text(self, messages: Sequence[dict[str, str]]) -> str: ...


def resolve_framing(codec: Codec, mode: FramingMode) -> ChatFraming:
    """The framing an episode uses with `codec`.

    `template`: the chat template's (an error for a codec without one); `continuation`: none;
    `auto`: the template's, except for codecs without one and for workbench's tiny models, whose
    ChatML template (`workbench.models.tiny.CHAT_TEMPLATE`) frames only the opening: they learn
    the continuation format."""
    if mode == "continuation":
        return CONTINUATION
    derived = codec.framing if isinstance(codec, TemplatedCodec) else None
    if derived is None:
        if mode == "template":
            raise ConfigError(
                f"framing='template' but the policy's codec ({type(codec).__name__}) has no chat template: "
                "use framing='auto' or 'continuation', or a tokenizer with a chat template"
            )
        return CONTINUATION
    if mode == "auto" and _is_tiny_template(codec):
        return CONTINUATION
    return derived


def _is_tiny_template(codec: Codec) -> bool:
    from workbench.models.tiny import CHAT_TEMPLATE

    return isinstance(codec, TemplatedCodec) and codec.chat_template == CHAT_TEMPLATE


def end_of_turn_ids(codec: Codec) -> tuple[int, ...]:
    """The ids that end a model's turn under `codec`: `codec.end_of_turn_ids` when it has them, else EOS."""
    ids = getattr(codec, "end_of_turn_ids", None)
    if ids is not None:
        return tuple(int(i) for i in ids)
    return () if codec.eos_token_id is None else (codec.eos_token_id,)


__all__ = ["CONTINUATION", "ChatFraming", "FramingMode", "TemplatedCodec", "end_of_turn_ids", "resolve_framing"]
