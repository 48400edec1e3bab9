"""Rewards: every seed's reward components, a registry, `RewardSpec` and `rescore`.

from workbench.rewards import RewardSpec, rescore, list_rewards
spec = RewardSpec.preset("l0")            # or "search_r1", "drzero_proposer", "agent0", ...
spec.score(traj)                          # {"l0.qa": ..., "l0.format": ..., "total": ...}
rescore(store, RewardSpec.load("my_reward.toml"), provenance={"reason": "try F1"})
"""

from workbench.rewards.agent0 import (
    self_consistency,
    tool_invocations,
    tool_reward,
    uncertainty_code,
    uncertainty_paper,
)
from workbench.rewards.asearcher import asearcher_prompt
from workbench.rewards.bleu import cluster_average_linkage, cluster_shares, sentence_bleu
from workbench.rewards.drzero import difficulty_score, drzero_format
from workbench.rewards.judge import LLMJudge, register_judge
from workbench.rewards.l0 import l0_step_rewards
from workbench.rewards.registry import RewardContext, get_reward, list_rewards, register_reward, reward
from workbench.rewards.rescore import rescore
from workbench.rewards.resolve import resolve_reward
from workbench.rewards.spec import RewardSpec, list_presets
from workbench.rewards.text import (
    asearcher_em,
    cover_em,
    exact_match,
    extract_answer,
    has_answer,
    normalize_answer,
    normalize_l0,
    normalize_unicode,
    set_f1,
    token_f1,
)

__all__ = [
    "LLMJudge",
    "RewardContext",
    "RewardSpec",
    "asearcher_em",
    "asearcher_prompt",
    "cluster_average_linkage",
    "cluster_shares",
    "cover_em",
    "difficulty_score",
    "drzero_format",
    "exact_match",
    "extract_answer",
    "get_reward",
    "has_answer",
    "l0_step_rewards",
    "list_presets",
    "list_rewards",
    "normalize_answer",
    "normalize_l0",
    "normalize_unicode",
    "register_judge",
    "register_reward",
    "rescore",
    "resolve_reward",
    "reward",
    "self_consistency",
    "sentence_bleu",
    "set_f1",
    "token_f1",
    "tool_invocations",
    "tool_reward",
    "uncertainty_code",
    "uncertainty_paper",
]
