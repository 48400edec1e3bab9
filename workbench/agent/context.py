"""The context watcher: keeps an episode's token context inside the window, exactly.

The context is token ids: the opening (system + task, rendered once by the policy's codec), each
kept turn's sampled completion ids and observation ids, then the notepad block. Lengths are exact
because they are the policy's own tokens.

With a chat template's framing (`workbench.policies.chat_framing`) an observation is a message of
its own: its ids start with the template's end of turn and header, and each turn (and an opening
rebuilt by a hard trim) has `closing` ids after it (the message's footer, the next assistant
header). The notepad block sits inside the newest message, before its closing; without framing the
closing is empty and the block ends the context.

The notepad is one tail segment, replaced on every turn: the context holds one notepad, the newest,
at the end of the newest observation, never stale copies. Replacing it means the context is no
longer the previous one plus what followed; `prompt_to_record()` then hands the whole context to
record as the next turn's prompt, so each recorded segment stays exactly what the model saw.
With `keep_notepads` a turn's block instead stays where it was shown, in that turn's observation:
the context only grows, so an untrimmed episode is one recorded segment (one training row, scored in
one forward, where a replaced block makes one row per turn, each carrying the whole context again).

When the next turn would not fit, older turns are trimmed:

- `hard`: keep only the task, the newest output (a fresh opening carrying them) and the notepad;
  keeping the newest output lets a model act on what it just saw even when the window fits one turn;
- `soft`: drop the oldest turns first; the newest observation and the notepad stay; if even that does
  not fit, fall back to hard;
- `none`: do not trim; the episode ends with `token_budget`.

The window is the configured `max_context_tokens`, never more than the policy's real context size
(`window()`), so a prompt the model cannot take is trimmed first and never sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Encoder = Callable[[str], list[int]]
Opening = list[int] | tuple[list[int], list[int]]  # ids, or (ids, closing ids after the notepad's place)


def window(max_context_tokens: int, context_size: int | None) -> int:
    """The context window an episode keeps to: the configured one, capped by the model's own."""
    return min(max_context_tokens, context_size) if context_size else max_context_tokens


@dataclass
class _Turn:
    completion_ids: list[int]
    observation_ids: list[int]
    closing_ids: list[int] = field(default_factory=list)  # after the observation (and the notepad)

    def __len__(self) -> int:
        return len(self.completion_ids) + len(self.observation_ids) + len(self.closing_ids)


@dataclass
class ContextWatcher:
    opening_ids: list[int]
    max_context_tokens: int
    max_new_tokens: int
    trim: str = "hard"
    turns: list[_Turn] = field(default_factory=list)
    notepad_ids: list[int] = field(default_factory=list)  # the tail: the newest notepad block
    trims: int = 0
    rebuilt: bool = True  # the context is not the last recorded one plus what followed it
    opening_closing: list[int] = field(default_factory=list)  # after the opening (and a notepad there)
    keep_notepads: bool = False  # an old block stays in its observation instead of leaving the context

    @property
    def context_ids(self) -> list[int]:
        ids = list(self.opening_ids)
        if not self.turns:
            return ids + self.notepad_ids + self.opening_closing
        ids += self.opening_closing
        for turn in self.turns[:-1]:
            ids += turn.completion_ids + turn.observation_ids + turn.closing_ids
        last = self.turns[-1]
        return ids + last.completion_ids + last.observation_ids + self.notepad_ids + last.closing_ids

    def __len__(self) -> int:
        kept = len(self.opening_ids) + len(self.opening_closing) + sum(len(t) for t in self.turns)
        return kept + len(self.notepad_ids)

    def room_for_generation(self) -> int:
        """Tokens the next turn may generate without overflowing the window."""
        return min(self.max_new_tokens, self.max_context_tokens - len(self))

    def append(
        self,
        completion_ids: Sequence[int],
        observation_ids: Sequence[int],
        notepad_ids: Sequence[int] = (),
        closing_ids: Sequence[int] = (),
    ) -> None:
        """Add a turn: its completion, its observation, the notepad block that replaces the last one,
        and the framing that closes the observation's message (none without a chat template)."""
        if self.notepad_ids and self.keep_notepads:  # the block stays where it was shown
            if self.turns:
                self.turns[-1].observation_ids += self.notepad_ids
            else:
                self.opening_ids += self.notepad_ids
        elif self.notepad_ids:
            self.rebuilt = True  # the old notepad leaves the middle of the context
        self.turns.append(_Turn(list(completion_ids), list(observation_ids), list(closing_ids)))
        self.notepad_ids = list(notepad_ids)

    def shrink(self, turn: _Turn, observation_ids: Sequence[int]) -> bool:
        """Replace a kept turn's observation with a shorter one (ASearcher's short_text); False when
        that turn was trimmed away already."""
        if not any(t is turn for t in self.turns):
            return False
        turn.observation_ids = list(observation_ids)
        self.rebuilt = True  # the context is no longer the last one plus what followed
        return True

    def prompt_to_record(self) -> list[int] | None:
        """The whole context if the next turn must record it as its prompt, else None.

        A turn's context is recorded when it is not the previous turn's context plus that turn's
        completion, observation and notepad: on the first turn, after a trim, and after the notepad
        block moved. Marks it recorded.
        """
        if not self.rebuilt:
            return None
        self.rebuilt = False
        return self.context_ids

    def needs_trim(self, min_new_tokens: int) -> bool:
        return self.room_for_generation() < min_new_tokens

    def trim_to_fit(self, min_new_tokens: int, hard_opening: Callable[[], Opening]) -> bool:
        """Trim so that at least `min_new_tokens` can be generated. Returns False if impossible.

        `hard_opening()` builds the task + last output opening used by hard trimming: its ids, or
        (ids, closing ids) when the notepad block goes inside its message; the block stays the tail.
        """
        if self.trim == "none":
            return False
        self.trims += 1
        self.rebuilt = True
        if self.trim == "soft":
            while self.turns and self.needs_trim(min_new_tokens):
                if len(self.turns) == 1:
                    break  # keep the newest observation: what the model just saw
                self.turns.pop(0)
            if not self.needs_trim(min_new_tokens):
                return True
        opening = hard_opening()
        self.opening_ids, self.opening_closing = opening if isinstance(opening, tuple) else (opening, [])
        self.turns = []
        return not self.needs_trim(min_new_tokens)

    def no_room(self, min_new_tokens: int) -> str:
        """Why a turn cannot run even after trimming, and what to change."""
        return (
            f"no room for a turn: the context (after any trim) holds {len(self)} tokens and a turn needs "
            f"{min_new_tokens}, but the window is {self.max_context_tokens} (the configured "
            "max_context_tokens or the model's context size, whichever is smaller); use "
            "prompt='compact', a smaller max_new_tokens or a model with more positions"
        )


__all__ = ["ContextWatcher", "Opening", "window"]
