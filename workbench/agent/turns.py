"""`TurnFramer`: an episode's observation and openings as token ids, framed as the chat template frames them.

After each turn the context grows by the sampled ids as they came back, then the observation:

    lead (the template's end of turn + the observation message's header) + body   -> kept
    notepad block                                                                 -> the replaceable tail
    closing (the message's footer + the next assistant header)                   -> kept

With `CONTINUATION` framing (no chat template, workbench's tiny models) lead and closing are empty:
the observation continues the model's text, as it always did. Nothing already in the context is
re-rendered or re-tokenized, so templates that rewrite history (Qwen3 drops `<think>` from past
assistant turns) never change what was sampled; where a template does not rewrite history, the ids
decode to its own rendering of the episode's messages.

    framer = TurnFramer(codec, resolve_framing(codec, "auto"))
    seen = framer.observation(completion_ids, body="\\n<output>\\n4\\n</output>\\n", notepad="<notepad>..")
    seen.kept_ids, seen.notepad_ids, seen.closing_ids
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.agent.context import Opening
from workbench.policies.base import Codec
from workbench.policies.chat_framing import ChatFraming, TemplatedCodec


@dataclass(frozen=True)
class FramedObservation:
    """One observation as the model sees it: kept text/ids, the notepad tail, the closing."""

    kept_text: str
    kept_ids: list[int]
    notepad_text: str
    notepad_ids: list[int]
    closing_text: str
    closing_ids: list[int]

    @property
    def text(self) -> str:
        return self.kept_text + self.notepad_text + self.closing_text

    @property
    def ids(self) -> list[int]:
        return self.kept_ids + self.notepad_ids + self.closing_ids


class TurnFramer:
    """Encodes observations and hard-trim openings for one codec under one framing."""

    def __init__(self, codec: Codec, framing: ChatFraming) -> None:
        self.codec, self.framing = codec, framing
        self._closing_ids = codec.encode(framing.after_observation) if framing.after_observation else []
        eot = codec.encode(framing.end_of_turn) if framing.end_of_turn else []
        self._end_of_turn = eot[0] if len(eot) == 1 else None

    def ended_turn(self, completion_ids: Sequence[int]) -> bool:
        """The sample ends with the template's own end-of-turn token."""
        return self._end_of_turn is not None and bool(completion_ids) and completion_ids[-1] == self._end_of_turn

    def observation(self, completion_ids: Sequence[int], body: str, notepad: str = "") -> FramedObservation:
        """The framed observation after a turn that sampled `completion_ids`; `notepad` is the block."""
        fit = self.framing.content
        kept = fit(body)
        tail = fit(body + notepad)[len(kept) :] if notepad else ""
        lead = self.framing.lead(self.ended_turn(completion_ids))
        closing = self.framing.after_observation
        return FramedObservation(
            lead + kept,
            self.codec.encode(lead + kept),
            tail,
            self.codec.encode(tail) if tail else [],
            closing,
            list(self._closing_ids),
        )

    def opening(self, messages: Sequence[dict[str, str]]) -> Opening:
        """The opening for `messages` (system, then the task): its ids, or (ids, closing) where the
        notepad goes before the closing, inside the task's message."""
        after_task = self.framing.after_task
        if self.framing.is_continuation or not isinstance(self.codec, TemplatedCodec):
            return self.codec.chat(messages)
        text = self.codec.chat_text(messages)
        if not after_task or not text.endswith(after_task):
            return self.codec.chat(messages)
        return self.codec.encode(text[: -len(after_task)]), self.codec.encode(after_task)


__all__ = ["FramedObservation", "TurnFramer"]
