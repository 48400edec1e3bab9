"""Who picks each edit of a synthesis: the `Synthesizer` protocol, the scripted teacher and a model.

ScriptedSynthesizer(target_hops=3).choose(qa, options, ready, rejected)   # '{"action": "inject", ...}'
PolicySynthesizer(policy).choose(...)                                      # the model's turn text
parse_action('<action>{"action": "exit"}</action>')                        # {'action': 'exit'}
"""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING, Any, Protocol

from workbench.synth.qa import SynthQA
from workbench.templates import prompt_template

if TYPE_CHECKING:
    from workbench.policies.base import Policy


class Synthesizer(Protocol):
    name: str

    def choose(self, qa: SynthQA, options: list[dict[str, Any]], ready: bool, rejected: list[dict[str, Any]]) -> str:
        """The raw text of the next action: JSON of an edit, or {"action": "exit"}."""


_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL)


def parse_action(text: str) -> dict[str, Any] | None:
    """The action in a turn's text (`<action>{json}</action>` or bare JSON); None if malformed."""
    m = _ACTION.search(text or "")
    body = (m.group(1) if m else text or "").strip()
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("action") not in ("inject", "fuzz", "exit"):
        return None
    return data


class ScriptedSynthesizer:
    """The teacher: injects through a random linked page, fuzzes a number when it can, and exits
    once the QA is hard and has `target_hops` facts. Skips edits that were rejected before."""

    def __init__(self, *, target_hops: int = 3, fuzz_share: float = 0.5, seed: int = 0) -> None:
        self.target_hops, self.fuzz_share, self.seed = target_hops, fuzz_share, seed
        self.name = f"scripted-synthesizer(hops={target_hops})"

    def choose(self, qa: SynthQA, options: list[dict[str, Any]], ready: bool, rejected: list[dict[str, Any]]) -> str:
        import zlib

        rng = random.Random(zlib.crc32(f"{self.seed}|{qa.question}|{len(rejected)}".encode()))
        if ready and qa.hops >= self.target_hops:
            return json.dumps({"action": "exit"})
        fresh = [o for o in options if o not in rejected]
        fuzzes = [o for o in fresh if o["action"] == "fuzz"]
        injects = [o for o in fresh if o["action"] == "inject"]
        if fuzzes and (not injects or rng.random() < self.fuzz_share or qa.hops >= self.target_hops):
            return json.dumps(rng.choice(fuzzes))
        if injects:
            return json.dumps(rng.choice(injects))
        return json.dumps({"action": "exit"})


class PolicySynthesizer:
    """A model chooses each edit from the options (`prompts/action.j2`), answering `<action>{json}</action>`."""

    def __init__(self, policy: Policy, *, max_new_tokens: int = 128, temperature: float = 0.8) -> None:
        self.policy, self.max_new_tokens, self.temperature = policy, max_new_tokens, temperature
        self.name = f"policy-synthesizer({getattr(policy, 'name', '?')})"

    def choose(self, qa: SynthQA, options: list[dict[str, Any]], ready: bool, rejected: list[dict[str, Any]]) -> str:
        from workbench.blocking import run_blocking
        from workbench.policies.base import SamplingParams

        prompt = (
            prompt_template("workbench.synth", "action.j2")
            .render(answer=qa.answer, question=qa.question, hops=qa.hops, ready=ready, options=options[:40])
            .strip()
        )
        ids = self.policy.codec.chat([{"role": "user", "content": prompt}])
        params = SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=0.95)
        [completion] = run_blocking(self.policy.generate([list(ids)], params))
        return completion.text


__all__ = ["PolicySynthesizer", "ScriptedSynthesizer", "Synthesizer", "parse_action"]
