r"""L0 / NB-Agent rewards: answer, stepwise format compliance and code-execution success.

For step i of a T-step trajectory L0 pays `r_i = 0.8·qa_i + 0.1·format_i + 0.1·code_i`:
- `qa` (last step only): `0.9·EM + 0.1·has_answer`.
- `format_i = 1/T` when the step has exactly one <think> and one <code> block, the think text is
  longer than 10 characters and the code longer than 5 (both stripped), else 0.
- `code_i = (1 − errors/outputs)/T` for a step whose code ran.

    l0_step_rewards(traj)      # [r_1, …, r_T], the per-step form training can use
    RewardSpec.preset("l0").score_steps(traj) == l0_step_rewards(traj)   # and sets Step.reward

EM is L0's (`_normalize_text` in `verl_adapter/reward/nb_agent_reward.py`): lowercase, drop
every character outside `[a-z0-9\s]`, collapse whitespace; articles are kept, so "Beatles" against
gold "The Beatles" is no match (qa 0.1, the has_answer term alone). `normalizer=` picks another.

Variants (named params):
- `has_answer="fixed"` (default) pays only for a non-empty answer; `"l0"` pays for any submitted
  answer, the empty string included, as L0 does.
- `no_output="success"` (default) counts a cell that ran without output as a success;
  `"zero"` scores it 0 as L0's code does.
- `normalizer="l0"` (default, L0's); `"squad"` drops articles and punctuation, `"unicode"` keeps
  non-ASCII letters.
Where L0's rule is not followed: a gold that normalises to "" (CJK, say) is compared by its light
form (NFKC, casefold), since under L0's rule every CJK answer would match every CJK gold; and EM
takes every gold alias (L0 compares against one string).
"""

from __future__ import annotations

import re
from typing import Any

from workbench.errors import ConfigError
from workbench.rewards.component import RewardContext, answer_of, component
from workbench.rewards.text import exact_match
from workbench.trajectory import Step, Trajectory

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_CODE = re.compile(r"<code>(.*?)</code>", re.DOTALL)


def step_well_formed(raw: str) -> bool:
    """Exactly one think and one code block; think > 10 chars, code > 5 chars."""
    thinks, codes = _THINK.findall(raw), _CODE.findall(raw)
    return len(thinks) == 1 and len(codes) == 1 and len(thinks[0].strip()) > 10 and len(codes[0].strip()) > 5


def count_outputs(observation: dict[str, Any] | None) -> tuple[int, int]:
    """(outputs, error outputs) of one executed cell.

    Reads workbench's `Observation.to_dict()` (stdout, stderr, display, result, error) or an
    nbformat-style `{"outputs": [{"output_type": ...}, ...]}`.
    """
    if not observation:
        return 0, 0
    if isinstance(observation.get("outputs"), list):
        outs = observation["outputs"]
        return len(outs), sum(1 for o in outs if o.get("output_type") == "error")
    errors = int(bool(observation.get("error_name") or observation.get("timed_out") or observation.get("kernel_died")))
    outputs = (
        bool(observation.get("stdout"))
        + bool(observation.get("stderr"))
        + len(observation.get("display") or [])
        + (observation.get("result") is not None)
        + errors
    )
    return outputs, errors


def step_code_score(step: Step, no_output: str = "success") -> float:
    """1 − errors/outputs for a step whose code ran (before the 1/T scaling); 0 if nothing ran."""
    if no_output not in ("success", "zero"):
        raise ConfigError(f"no_output={no_output!r}; use 'success' or 'zero'")
    if step.observation is None:
        return 0.0
    outputs, errors = count_outputs(step.observation)
    if outputs == 0:
        return 1.0 if no_output == "success" else 0.0
    return 1.0 - errors / outputs


def l0_qa(answer: str | None, golds: list[str], *, has_answer: str = "fixed", normalizer: str = "l0") -> float:
    """`0.9·EM + 0.1·has_answer`."""
    if has_answer not in ("fixed", "l0"):
        raise ConfigError(f"has_answer={has_answer!r}; use 'fixed' or 'l0'")
    has = answer is not None and (has_answer == "l0" or bool(answer.strip()))
    return 0.9 * exact_match(answer, golds, normalizer) + 0.1 * float(has)


def l0_step_rewards(
    traj: Trajectory,
    *,
    weights: tuple[float, float, float] = (0.8, 0.1, 0.1),
    has_answer: str = "fixed",
    no_output: str = "success",
    normalizer: str = "l0",
) -> list[float]:
    """L0's per-step rewards `w_qa·qa_i + w_fmt·format_i + w_code·code_i` (qa on the last step)."""
    T = len(traj.steps)
    if T == 0:
        return []
    qa = l0_qa(answer_of(traj), traj.task.golden_answers, has_answer=has_answer, normalizer=normalizer)
    out = []
    for i, step in enumerate(traj.steps):
        fmt = float(step_well_formed(step.raw or "")) / T
        code = step_code_score(step, no_output) / T
        out.append(weights[0] * (qa if i == T - 1 else 0.0) + weights[1] * fmt + weights[2] * code)
    return out


@component("l0.qa")
def l0_qa_reward(traj: Trajectory, ctx: RewardContext, *, has_answer: str = "fixed", normalizer: str = "l0") -> float:
    """L0 answer score 0.9·EM + 0.1·has_answer."""
    return l0_qa(answer_of(traj), traj.task.golden_answers, has_answer=has_answer, normalizer=normalizer)


@component("l0.format", per_step=True, reads_turn_format=True)
def l0_format_reward(traj: Trajectory, ctx: RewardContext) -> list[float]:
    """L0's per-step format compliance 1/T (sum = fraction of well-formed steps)."""
    T = len(traj.steps)
    return [float(step_well_formed(s.raw or "")) / T for s in traj.steps]


@component("l0.code", per_step=True, reads_turn_format=True)
def l0_code_reward(traj: Trajectory, ctx: RewardContext, *, no_output: str = "success") -> list[float]:
    """L0's per-step code-execution success (1 − errors/outputs)/T."""
    T = len(traj.steps)
    return [step_code_score(s, no_output) / T for s in traj.steps]
