"""How well a model's turns follow the NB-Agent format, and what it writes when they do not.

A turn follows the format when it has a `<think>` part and a `<code>` part and the code ran without
an error. Every other turn gets one habit naming what the model did instead (prose with no code, a
Markdown code fence instead of `<code>`, code that raised, ...), so a zero-shot evaluation says more
than "0%":

    shares = turn_format(report.trajectories)
    shares.followed / shares.turns, shares.habits.most_common(3), shares.example
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from workbench.trajectory import Step, Trajectory

FOLLOWED = "followed the format"


def turn_habit(step: Step) -> str:
    """What one turn did: FOLLOWED, or what it wrote instead."""
    observation = step.observation or {}
    if step.code:
        if observation.get("error_name"):
            return f"code raised {observation['error_name']}"
        return FOLLOWED if step.think else "code without <think>"
    raw = step.raw.strip()
    if not raw:
        return "an empty turn"
    if "```" in raw:
        return "a Markdown code fence instead of <code>"
    if "<code>" in raw:
        return "an unclosed <code> block"
    return "prose with no code" + (" (after a <think>)" if step.think else "")


@dataclass
class FormatShares:
    """Counts over every turn of a set of episodes."""

    turns: int = 0
    with_think: int = 0
    with_code: int = 0
    code_ran: int = 0  # code present and ran without an error
    followed: int = 0  # think, code, and the code ran
    habits: Counter[str] = field(default_factory=Counter)
    example: str = ""  # the first turn that did not follow the format, cut short

    def to_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "with_think": self.with_think,
            "with_code": self.with_code,
            "code_ran": self.code_ran,
            "followed": self.followed,
            "habits": dict(self.habits.most_common()),
            "example": self.example,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FormatShares:
        """The counts `to_dict` wrote (a cached evaluation's)."""
        return cls(**{**data, "habits": Counter(data.get("habits", {}))})

    def lines(self) -> list[str]:
        """Plain-text lines for a report (the SmolLM2 demo prints them)."""
        n = max(self.turns, 1)
        lines = [
            f"  format over {self.turns} turns: think {self.with_think / n:.0%}, code {self.with_code / n:.0%}, "
            f"code ran {self.code_ran / n:.0%}, all three {self.followed / n:.0%}"
        ]
        instead = [(h, c) for h, c in self.habits.most_common() if h != FOLLOWED]
        if instead:
            lines.append("  instead: " + "; ".join(f"{h} ({c})" for h, c in instead[:4]))
        if self.example:
            lines.append(f"  e.g. {self.example!r}")
        return lines


def turn_format(trajectories: Iterable[Trajectory], example_chars: int = 160) -> FormatShares:
    """Format counts over every turn of `trajectories`."""
    shares = FormatShares()
    for traj in trajectories:
        for step in traj.steps:
            habit = turn_habit(step)
            shares.turns += 1
            shares.with_think += bool(step.think)
            shares.with_code += bool(step.code)
            shares.code_ran += bool(step.code) and not (step.observation or {}).get("error_name")
            shares.followed += habit == FOLLOWED
            shares.habits[habit] += 1
            if habit != FOLLOWED and not shares.example:
                shares.example = " ".join(step.raw.split())[:example_chars]
    return shares


__all__ = ["FOLLOWED", "FormatShares", "turn_format", "turn_habit"]
