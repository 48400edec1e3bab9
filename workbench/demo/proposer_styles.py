"""How a learned proposer's episodes are shaped (`DemoConfig.proposer_style`): its teacher, its kernel setup and the
fingerprint of its cells in every cache key built from its episodes.

    style = PROPOSER_STYLES[cfg.proposer_style]
    style.teacher(seed=0, codec=codec)   # the scripted teacher whose episodes the proposer's SFT imitates
    style.agent                          # the AgentConfig keywords the style sets (the hop style's task setup)

- **code** (`workbench.worlds.scripted.coder_proposer`, `--proposer learned` on the tiny model): the model writes one
  constant cell that reads the document from `task` and defines `hop(i)` (~470 tokens of the tiny tokenizer, ~570
  of SmolLM2's), then one `hop(i)` a turn. The prompt's n fixes the hop count, so its one free choice is which fact
  to follow.
- **hop** (`workbench.evolve.hop_proposer`, the preset of `--model smollm2 --proposer learned`): the kernel defines
  `hop(i)` and `ask()` before the first turn (the agent's `task_setup`, not shown to the model), so every turn is
  one short line and the proposer makes two choices: which fact to follow and how many hops, up to the prompt's
  n, to take before asking. The second is what sets a question's difficulty for the demo's solver, whose misses
  submit after too few hops (the band gate, `bench/bench_coevolution.py --band`). On SmolLM2 sampled at
  temperature 1 the code style's constant cell came out broken in each of the first 4 HRPO rollouts of a run
  (none submitted): one wrong token in 570 breaks the cell.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.evolve.hop_proposer import ASK_TURN, HOP_SETUP, HOP_TURN, STUCK_TURN, hop_teacher
from workbench.worlds.scripted.coder_proposer import HOP_TURN as CODE_HOP_TURN
from workbench.worlds.scripted.coder_proposer import PLAN_TURN, coder_proposer
from workbench.worlds.scripted.coder_proposer import STUCK_TURN as CODE_STUCK_TURN

if TYPE_CHECKING:
    from workbench.policies.base import Codec, Policy


def _fingerprint(*cells: str) -> str:
    return hashlib.sha1("".join(cells).encode()).hexdigest()[:6]


@dataclass(frozen=True)
class ProposerStyle:
    """One way of writing proposer episodes (module docstring)."""

    name: str
    make_teacher: Callable[..., Policy]  # (seed=, codec=) -> the scripted teacher
    fingerprint: str  # of the teacher's cells: part of every cache key built from its episodes
    agent: dict[str, Any] = field(default_factory=dict)  # AgentConfig keywords the style sets

    def teacher(self, *, seed: int, codec: Codec | None = None) -> Policy:
        return self.make_teacher(seed=seed, codec=codec)


CODE_STYLE = ProposerStyle("code", coder_proposer, _fingerprint(PLAN_TURN, CODE_HOP_TURN, CODE_STUCK_TURN))
HOP_STYLE = ProposerStyle(
    "hop", hop_teacher, _fingerprint(HOP_SETUP, HOP_TURN, ASK_TURN, STUCK_TURN), {"task_setup": HOP_SETUP}
)
PROPOSER_STYLES = {style.name: style for style in (CODE_STYLE, HOP_STYLE)}

__all__ = ["CODE_STYLE", "HOP_STYLE", "PROPOSER_STYLES", "ProposerStyle"]
