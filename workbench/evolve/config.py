"""Configs of the two self-evolution modes, from keywords or a TOML/YAML file.

    cfg = DrZeroConfig(run_dir="runs/evolve", iterations=2, prompts_per_iteration=16)
    cfg = Agent0Config.load("evolve.toml", iterations=1)      # an [evolve] table, or the top level

Every field carries `help` metadata. Agent settings for episodes come as keyword dicts for
`workbench.agent.AgentConfig` (`proposer_agent`, `solver_agent`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from workbench.configfile import Config, config_field
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.agent.config import AgentConfig
    from workbench.rewards.spec import RewardSpec


@dataclass
class EvolveConfig(Config, abc.ABC):
    """Settings shared by both modes."""

    config_table = "evolve"

    run_dir: str = config_field("runs/evolve", "Where iter_<i>/ folders (QA sets, checkpoints, state) are written.")
    run_id: str = config_field("", "Run id for trajectories and metrics; defaults to run_dir's name.")
    iterations: int = config_field(1, "Proposer/solver iterations.")
    prompts_per_iteration: int = config_field(8, "Proposer prompts (document + hop count) per iteration.")
    samples_per_prompt: int = config_field(
        1, "Proposer episodes per prompt; the solver attempts and the QA set keep the best-format one (Dr. Zero mode)."
    )
    hop_weights: dict[int, float] = config_field(
        {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0}, "Hop-count sampling weights (Dr. Zero: 4:3:2:1)."
    )
    solver_attempts: int = config_field(5, "Solver episodes per valid question (n).")
    max_question_words: int = config_field(50, "QA-set questions are cut to this many words.")
    max_document_chars: int = config_field(1200, "Source documents are cut to this many characters.")
    shared_model: bool = config_field(False, "Proposer and solver are one model: the solver policy is the proposer's.")
    concurrency: int = config_field(4, "Episodes run at once (one sandboxed kernel each).")
    seed: int = config_field(0, "Seed for document and hop sampling.")
    proposer_agent: dict[str, Any] = config_field(
        {"max_steps": 6, "max_context_tokens": 8192}, "AgentConfig keywords for proposer episodes."
    )
    solver_agent: dict[str, Any] = config_field(
        {"max_steps": 6, "max_context_tokens": 8192}, "AgentConfig keywords for solver episodes."
    )
    proposer_estimator: str = config_field("hrpo", "Estimator of the proposer update (workbench.train).")
    solver_estimator: str = config_field("grpo", "Estimator of the solver update (workbench.train).")
    proposer_group_size: int = config_field(
        1, "Rollouts per prompt in the proposer update (TrainConfig.num_generations; hrpo always samples 1 per prompt)."
    )
    solver_group_size: int = config_field(
        4, "Rollouts per question in the solver update (TrainConfig.num_generations)."
    )
    progress: bool = config_field(True, "Show tqdm progress bars.")

    mode = "evolve"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.hop_weights = {int(k): float(v) for k, v in dict(self.hop_weights).items()}
        self.validate()

    def validate(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"{type(self).__name__}.{name}: {why}")

        for name in (
            "iterations",
            "prompts_per_iteration",
            "samples_per_prompt",
            "concurrency",
            "max_question_words",
            "proposer_group_size",
            "solver_group_size",
        ):
            if getattr(self, name) < 1:
                raise bad(name, "must be >= 1")
        if self.solver_attempts < 2:
            raise bad("solver_attempts", "must be >= 2: difficulty and majority vote compare attempts")
        if (
            not self.hop_weights
            or any(h < 1 or w < 0 for h, w in self.hop_weights.items())
            or sum(self.hop_weights.values()) <= 0
        ):
            raise bad("hop_weights", f"{self.hop_weights}: keys are hop counts >= 1, weights >= 0, not all 0")
        from workbench.train.estimators import estimator_class

        for name in ("proposer_estimator", "solver_estimator"):
            estimator_class(getattr(self, name), where=f"{type(self).__name__}.{name}")  # a ConfigError naming it
        for name in ("proposer_agent", "solver_agent"):
            try:
                self.agent_config(name.split("_")[0])
            except ConfigError as exc:  # "AgentConfig.max_steps: ..." named under its parent
                raise ConfigError(str(exc).replace("AgentConfig", f"{type(self).__name__}.{name}")) from None

    def group_size(self, role: str) -> int:
        return self.proposer_group_size if role == "proposer" else self.solver_group_size

    @abc.abstractmethod
    def proposer_spec(self) -> RewardSpec:
        """The proposer's `RewardSpec` (a preset, adjusted by this config's fields)."""

    @abc.abstractmethod
    def solver_spec(self) -> RewardSpec:
        """The solver's `RewardSpec`: exact match against the question's target."""

    def agent_config(self, role: str) -> AgentConfig:
        from workbench.agent.config import AgentConfig

        values = dict(self.proposer_agent if role == "proposer" else self.solver_agent)
        values.setdefault("seed", self.seed)
        return AgentConfig.from_dict(values)

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or Path(self.run_dir).name

    # -- loading ----------------------------------------------------------------------------
    @classmethod
    def accepted_keys(cls) -> set[str]:
        return super().accepted_keys() | {"mode"}  # to_dict writes it

    @classmethod
    def _build(cls, data: Mapping[str, Any], where: str) -> Self:
        data = dict(data)
        mode = data.pop("mode", cls.mode)
        if mode != cls.mode:
            raise ConfigError(f"{where}.mode: {mode!r} is not {cls.mode!r}; this config is {cls.__name__}")
        return super()._build(data, where)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "mode": self.mode}


def _spec(preset: str, patch: Callable[[dict[str, Any]], None]) -> RewardSpec:
    """`preset`, with `patch(dict)` applied; renamed `<preset>~<hash>` when that changed it (the
    stored spec JSON still reproduces it; the bare preset name would not)."""
    import copy
    import hashlib
    import json

    from workbench.rewards.presets import PRESETS
    from workbench.rewards.spec import RewardSpec

    data = copy.deepcopy(PRESETS[preset])
    patch(data)
    if data != PRESETS[preset]:
        digest = hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()[:8]
        data["name"] = f"{preset}~{digest}"
    return RewardSpec.from_dict(data)


@dataclass
class DrZeroConfig(EvolveConfig):
    """Dr. Zero: proposer reward `format_weight·format + difficulty`; proposer HRPO, solver GRPO.

    Defaults from the paper and its code: 5 proposer samples per prompt (the best-format one is
    kept), n = 5 solver attempts, proposer group size 1 (HRPO) and solver group size 5 (GRPO)."""

    samples_per_prompt: int = config_field(5, "Proposer samples per prompt; the best-format one is kept (Dr. Zero: 5).")
    proposer_group_size: int = config_field(1, "Proposer rollouts per prompt (Dr. Zero HRPO: 1).")
    solver_group_size: int = config_field(5, "Solver rollouts per question (Dr. Zero GRPO: n = 5).")
    format_weight: float = config_field(0.5, "Weight of the format score in the proposer reward (Dr. Zero code: 0.5).")
    mode = "drzero"

    def proposer_spec(self) -> RewardSpec:
        def patch(d: dict) -> None:
            d["components"][0]["weight"] = self.format_weight

        return _spec("drzero_proposer", patch)

    def solver_spec(self) -> RewardSpec:
        return _spec("drzero_solver", lambda d: None)


@dataclass
class Agent0Config(EvolveConfig):
    """Agent0: curriculum reward `uncertainty + tool use − repetition`; executor ADPO on pseudo-labels."""

    solver_attempts: int = config_field(10, "Executor attempts per question (Agent0 reward: 10).")
    proposer_estimator: str = config_field("grpo", "Estimator of the curriculum (proposer) update.")
    solver_estimator: str = config_field("adpo", "Estimator of the executor (solver) update.")
    p_low: float = config_field(0.3, "Keep questions with self-consistency p >= p_low (Agent0 README: 0.3).")
    p_high: float = config_field(0.8, "... and p <= p_high (README: 0.8; upload.py default 0.7).")
    p_denominator: str = config_field("valid", "Band p over 'valid' answers (Agent0 curation) or 'all' attempts.")
    proposer_group_size: int = config_field(4, "Curriculum rollouts per prompt (Agent0 App. A.1: 4).")
    solver_group_size: int = config_field(16, "Executor rollouts per question (Agent0 App. A.1: 16).")
    uncertainty_form: str = config_field(
        "paper",
        "'paper': preset agent0_paper, R_format·max(0, 1 - 2|p - 0.5| + "
        "λ_tool·R_tool - R_rep) (eq. 5); 'code': preset agent0, min(p, 1 - p) "
        "gated on agreement - R_rep + R_tool, -1 without a question.",
    )
    tool_gamma: float = config_field(0.05, "Tool-use reward per call, γ in R_tool = γ·min(N, C) (Agent0 code: 0.05).")
    tool_lambda: float = config_field(0.6, "λ_tool, the weight of R_tool in the paper's form (Agent0 §4: 0.6).")
    tool_cap: int = config_field(4, "Tool calls counted at most, C (Agent0: 4).")
    tool_count: str = config_field(
        "cells",
        "What N counts per executor attempt: 'cells' (executed cells that did not "
        "submit the answer) or 'calls' (host tool calls but the submission).",
    )
    repetition_threshold: float = config_field(0.5, "BLEU distance threshold of the repetition clusters.")
    mode = "agent0"

    def proposer_spec(self) -> RewardSpec:
        preset = "agent0_paper" if self.uncertainty_form == "paper" else "agent0"

        def patch(d: dict) -> None:
            for c in d["components"]:
                if c["name"] == "agent0.tool":
                    c["params"].update(gamma=self.tool_gamma, cap=self.tool_cap)
                    if self.tool_count != "cells":
                        c["params"]["count"] = self.tool_count
                    if preset == "agent0_paper":
                        c["weight"] = self.tool_lambda
                if c["name"] == "agent0.repetition" and self.repetition_threshold != 0.5:
                    c["params"] = {"threshold": self.repetition_threshold}

        return _spec(preset, patch)

    def solver_spec(self) -> RewardSpec:
        return _spec("agent0_executor", lambda d: None)

    def validate(self) -> None:
        super().validate()
        if not 0.0 <= self.p_low <= self.p_high <= 1.0:
            raise ConfigError(
                f"Agent0Config.p_low/p_high: need 0 <= p_low <= p_high <= 1, got {self.p_low}, {self.p_high}"
            )
        if self.p_denominator not in ("valid", "all"):
            raise ConfigError(f"Agent0Config.p_denominator: {self.p_denominator!r}; use 'valid' or 'all'")
        if self.uncertainty_form not in ("paper", "code"):
            raise ConfigError(f"Agent0Config.uncertainty_form: {self.uncertainty_form!r}; use 'paper' or 'code'")
        if self.tool_count not in ("cells", "calls"):
            raise ConfigError(f"Agent0Config.tool_count: {self.tool_count!r}; use 'cells' or 'calls'")


__all__ = ["Agent0Config", "DrZeroConfig", "EvolveConfig"]
