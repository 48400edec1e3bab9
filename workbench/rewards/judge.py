"""An LLM judge as a reward component: any policy decides whether an answer matches the gold.

    from workbench.rewards import LLMJudge, register_judge, RewardSpec
    register_judge("default", LLMJudge(OpenAIPolicy(...)))          # or a ScriptedPolicy in tests
    RewardSpec.preset("asearcher_judge").score(traj)                 # llm_judge × ASearcher format

`LLMJudge` asks with ASearcher's judge prompt (question, labeled answer, predicted answer; the
gold aliases joined by " / ") and reads the verdict as ASearcher's evaluation does: the JSON
after the last ```` ```json ````, else a `"judgement": "correct"/"incorrect"` substring. Correct →
1.0; incorrect or unreadable → 0.0. The prediction is cut at its first "</" and to 1000
characters, as upstream.

The component `llm_judge` (param `judge`, the registered name) stores each verdict in
`metadata["judge_verdicts"][name]` with the answer it judged; the same answer is never judged
twice under one name, so `rescore` reproduces the verdict without calling the model (register
under a new name to judge again). A new answer with no judge registered is an error that says
how to register one.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from workbench.blocking import run_blocking
from workbench.errors import ConfigError
from workbench.rewards.component import RewardContext, answer_of, component
from workbench.trajectory import Trajectory

if TYPE_CHECKING:
    from workbench.policies.base import Policy

_JUDGES: dict[str, Any] = {}


@lru_cache(maxsize=1)
def judge_prompt_template() -> str:
    return resources.files("workbench.rewards").joinpath("prompts", "asearcher_judge.txt").read_text("utf-8")


def judge_prompt(question: str, prediction: str, golds: Sequence[str]) -> str:
    pred = prediction.split("</")[0][:1000]
    return (
        judge_prompt_template()
        .replace("{question}", question)
        .replace("{gt_answer}", " / ".join(golds))
        .replace("{pred_answer}", pred)
    )


def parse_verdict(text: str) -> bool | None:
    """True (correct), False (incorrect) or None (unreadable), as ASearcher's `cal_metrics`."""
    block = text.split("```json")[-1].split("```")[0].strip()
    parsed: Any = None
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(block)
            break
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    if isinstance(parsed, dict):
        return str(parsed.get("judgement", "")).lower() == "correct"
    low = text.lower()
    if '"judgement": "incorrect"' in low:
        return False
    if '"judgement": "correct"' in low or '"judgement": correct' in low:
        return True
    return None


class LLMJudge:
    """`judge(question, prediction, golds) -> 1.0 | 0.0` through any `Policy`."""

    def __init__(self, policy: Policy, *, max_new_tokens: int = 512, temperature: float = 0.0) -> None:
        if not hasattr(policy, "generate") or not hasattr(policy, "codec"):
            raise ConfigError(
                "LLMJudge needs a workbench policy (with .generate and .codec), e.g. "
                "OpenAIPolicy(...) or ScriptedPolicy(fn)"
            )
        self.policy = policy
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        self.last_text = ""

    def __call__(self, question: str, prediction: str | None, golds: Sequence[str]) -> float:
        if prediction is None:
            return 0.0
        from workbench.policies.base import SamplingParams

        ids = self.policy.codec.chat([{"role": "user", "content": judge_prompt(question, prediction, golds)}])
        params = SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature)
        [out] = run_blocking(self.policy.generate([ids], params))
        self.last_text = out.text
        return float(parse_verdict(out.text) is True)


def register_judge(name: str, judge: Any) -> None:
    """Make `judge(question, prediction, golds) -> float` available to `llm_judge` as `name`."""
    if not callable(judge):
        raise ConfigError(
            f"register_judge({name!r}, ...): the judge must be callable "
            "(question, prediction, golds) -> float, e.g. LLMJudge(policy)"
        )
    _JUDGES[name] = judge


@component("llm_judge")
def llm_judge_reward(traj: Trajectory, ctx: RewardContext, *, judge: str = "default") -> float:
    """An LLM judge's verdict on the answer (1 correct, 0 not); see `register_judge`."""
    answer = answer_of(traj)
    if answer is None:
        return 0.0
    verdicts = traj.metadata.setdefault("judge_verdicts", {})
    cached = verdicts.get(judge)
    if cached is not None and cached.get("answer") == answer:
        return float(cached["score"])
    if judge not in _JUDGES:
        raise ConfigError(
            f"no judge named {judge!r}: register one with workbench.rewards.register_judge({judge!r}, LLMJudge(policy))"
        )
    score = float(_JUDGES[judge](traj.task.question, answer, list(traj.task.golden_answers)))
    verdicts[judge] = {"answer": answer, "score": score}
    return score


__all__ = ["LLMJudge", "judge_prompt", "llm_judge_reward", "parse_verdict", "register_judge"]
