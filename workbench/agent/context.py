"""The context watcher: keeps an episode's token context inside the window, exactly.

The context is token ids: the opening (system + task, rendered once by the policy's codec) followed by
each kept turn's sampled completion ids and observation ids. Lengths are exact because they are the
policy's own tokens. When the next turn would not fit, older turns are trimmed:

- `hard`: keep only the task, the notepad and the newest output (a fresh opening carrying them);
  keeping the newest output lets a model act on what it just saw even when the window fits one turn;
- `soft`: drop the oldest turns first; the newest observation (which carries the notepad) stays; if even
  that does not fit, fall back to hard;
- `none`: do not trim; the episode ends with `token_budget`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

Encoder = Callable[[str], list[int]]


@dataclass
class _Turn:
    completion_ids: list[int]
    observation_ids: list[int]

    def __len__(self) -> int:
        return len(self.completion_ids) + len(self.observation_ids)


@dataclass
class ContextWatcher:
    opening_ids: list[int]
    max_context_tokens: int
    max_new_tokens: int
    trim: str = "hard"
    turns: list[_Turn] = field(default_factory=list)
    trims: int = 0

    @property
    def context_ids(self) -> list[int]:
        ids = list(self.opening_ids)
        for turn in self.turns:
            ids += turn.completion_ids + turn.observation_ids
        return ids

    def __len__(self) -> int:
        return len(self.opening_ids) + sum(len(t) for t in self.turns)

    def room_for_generation(self) -> int:
        """Tokens the next turn may generate without overflowing the window."""
        return min(self.max_new_tokens, self.max_context_tokens - len(self))

    def append(self, completion_ids: Sequence[int], observation_ids: Sequence[int]) -> None:
        self.turns.append(_Turn(list(completion_ids), list(observation_ids)))

    def needs_trim(self, min_new_tokens: int) -> bool:
        return self.room_for_generation() < min_new_tokens

    def trim_to_fit(self, min_new_tokens: int, hard_opening: Callable[[], list[int]]) -> bool:
        """Trim so that at least `min_new_tokens` can be generated. Returns False if impossible.

        `hard_opening()` builds the task + notepad opening used by hard trimming.
        """
        if self.trim == "none":
            return False
        self.trims += 1
        if self.trim == "soft":
            while self.turns and self.needs_trim(min_new_tokens):
                if len(self.turns) == 1:
                    break  # the newest observation holds the notepad: never drop it silently
                self.turns.pop(0)
            if not self.needs_trim(min_new_tokens):
                return True
        self.opening_ids = hard_opening()
        self.turns = []
        return not self.needs_trim(min_new_tokens)


__all__ = ["ContextWatcher"]
