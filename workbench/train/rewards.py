"""How training scores a trajectory: a `RewardSpec` from `workbench.rewards`, or the built-in exact match.

    scorer = resolve_reward("exact_match")         # name, JSON spec, or any object with .score(traj)
    scorer.score(traj)  ->  {"total": 1.0, "exact_match": 1.0}

Anything with `score(trajectory) -> dict` (with a "total" key) works; a plain callable returning a
float or such a dict does too.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any

from workbench.errors import ConfigError
from workbench.trajectory import Trajectory


def normalize_answer(text: str) -> str:
    """Search-R1's EM normalisation: lowercase, drop punctuation and articles, squeeze spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


class ExactMatchReward:
    """1.0 when the final answer equals a golden answer after normalisation, else 0.0."""

    name = "exact_match"

    def score(self, traj: Trajectory) -> dict[str, float]:
        pred = normalize_answer(traj.final_answer or "")
        hit = bool(pred) and any(pred == normalize_answer(g) for g in traj.task.golden_answers)
        return {"total": float(hit), "exact_match": float(hit)}


class _CallableReward:
    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "reward")

    def score(self, traj: Trajectory) -> dict[str, float]:
        out = self.fn(traj)
        return dict(out) if isinstance(out, dict) else {"total": float(out)}


def _from_rewards_layer(spec: str) -> Any | None:
    try:
        import workbench.rewards as rewards  # type: ignore[import-not-found]
    except ImportError:
        return None
    cls = getattr(rewards, "RewardSpec", None)
    if cls is None:
        return None
    text = spec.strip()
    if text.startswith("{"):
        for attr in ("from_json", "parse"):
            if hasattr(cls, attr):
                return getattr(cls, attr)(text)
        if hasattr(cls, "from_dict"):
            return cls.from_dict(json.loads(text))
    for attr in ("from_name", "named", "get"):
        if hasattr(cls, attr):
            return getattr(cls, attr)(text)
    getter = getattr(rewards, "get_spec", None)
    return getter(text) if getter else None


def resolve_reward(spec: Any) -> Any:
    """Turn a config's reward setting into an object with `.score(traj) -> dict`."""
    if hasattr(spec, "score"):
        return spec
    if callable(spec):
        return _CallableReward(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("reward: give a reward spec name, a JSON spec, or an object with .score(traj)")
    try:
        found = _from_rewards_layer(spec)
    except (KeyError, LookupError):
        found = None
    if found is not None:
        return found
    if spec.strip() in ("exact_match", "em"):
        return ExactMatchReward()
    raise ConfigError(f"reward {spec!r} is unknown here: install workbench.rewards for named/JSON specs, "
                      "or use 'exact_match'")


def score_trajectory(scorer: Any, traj: Trajectory) -> dict[str, float]:
    """Score, store the result on the trajectory, and check it has a total."""
    rewards = dict(scorer.score(traj))
    if "total" not in rewards:
        raise ConfigError(f"reward {getattr(scorer, 'name', scorer)!r} returned no 'total': {sorted(rewards)}")
    traj.rewards = {k: float(v) for k, v in rewards.items()}
    traj.reward_spec = str(getattr(scorer, "name", type(scorer).__name__))
    return traj.rewards


__all__ = ["ExactMatchReward", "normalize_answer", "resolve_reward", "score_trajectory"]
