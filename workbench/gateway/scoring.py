"""Rewards of gateway rollouts: the gateway's reward spec scores a finished rollout's answer, or the
harness posts its own (`POST /rollouts/{id}/reward`, `r.reward(value)`); both are stored with provenance.

    gw = ModelGateway(policy, store="runs/mine", reward="f1")    # scored when each rollout finishes

A harness's calls are not NB-Agent turns, so components that read an agent's turn format (marked
`reads_turn_format=True` where they are defined, your own `@reward(...)` included) refuse, with a
`ConfigError` naming the component; answer-based ones (em, f1, set_f1, l0.qa, ...) score
`final_answer` against the task's golden answers, and `rescore` reproduces them.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.contracts import Scorer
from workbench.errors import ConfigError
from workbench.trajectory import Trajectory

__all__ = ["check_scorer", "harness_rewards", "reads_turn_format", "resolve_scorer", "score_rollout"]


def reads_turn_format(name: str) -> bool:
    """Whether the registered component `name` reads an agent's turn format (False for a name not registered)."""
    from workbench.rewards.registry import get_reward, list_rewards

    return name in list_rewards() and get_reward(name).reads_turn_format


def resolve_scorer(reward: Scorer | str | None) -> Scorer | None:
    """A reward as a scorer (a preset, component name, spec file or object with `.score`), checked."""
    if reward is None:
        return None
    from workbench.rewards import resolve_reward

    scorer = resolve_reward(reward)
    check_scorer(scorer)
    return scorer


def check_scorer(scorer: Scorer) -> None:
    """Refuse a spec with a component that reads an agent's turn format."""
    names = [c.name for c in getattr(scorer, "components", [])] + list(getattr(scorer, "gate", []))
    for name in names:
        if reads_turn_format(name):
            raise ConfigError(
                f"reward component {name!r} reads NB-Agent's turn format, which a harness's calls do not follow; "
                "score the answer instead (em, f1, set_f1, l0.qa, ...) or post the harness's own reward"
            )


def score_rollout(scorer: Scorer, traj: Trajectory) -> tuple[dict[str, float], str, Any]:
    """The rewards of a finished rollout, the spec's name and its JSON (for the store's history)."""
    rewards = {k: float(v) for k, v in scorer.score(traj).items()}
    to_json = getattr(scorer, "to_json", None)
    return rewards, str(getattr(scorer, "name", type(scorer).__name__)), to_json() if callable(to_json) else None


def harness_rewards(body: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """A posted reward, `{"value": 1.0, "components": {...}, "source": "...", "reason": "..."}`, checked."""
    if not isinstance(body, dict) or not isinstance(body.get("value"), (int, float)) or isinstance(body["value"], bool):
        raise ConfigError('send {"value": NUMBER} (optional "components": {NAME: NUMBER}, "source", "reason")')
    parts = body.get("components") or {}
    if not isinstance(parts, dict) or not all(isinstance(v, (int, float)) for v in parts.values()):
        raise ConfigError('"components" must map names to numbers')
    rewards = {str(k): float(v) for k, v in parts.items()} | {"total": float(body["value"])}
    if not all(math.isfinite(v) for v in rewards.values()):
        raise ConfigError("rewards must be finite numbers")
    provenance = {"source": str(body.get("source") or "harness")}
    if body.get("reason"):
        provenance["reason"] = str(body["reason"])
    return rewards, provenance
