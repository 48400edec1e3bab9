"""The CPU demo (`make demo`, `python -m workbench.demo`): a model learns to be an NB-Agent.

    run_demo(DemoConfig.preset("fast"))                                  # make demo's stages, smoke-sized
    run_demo(DemoConfig.preset("smollm2"), model=PretrainedModel())      # python -m workbench.demo --model smollm2

A tiny causal LM is built locally (a tokenizer trained on a synthetic world's text, a random 2-layer Qwen2) or
SmolLM2-135M-Instruct is loaded, warmed with SFT on a scripted teacher's trajectories (real sandboxed kernels,
real search), evaluated on held-out questions, improved by self-evolution with GRPO (the proposer scripted, or
learning too, by HRPO), and evaluated again. One stage sequence runs every variant (`workbench.demo.pipeline`).
"""

from __future__ import annotations

from workbench.demo.config import DemoConfig, preset_name
from workbench.demo.models import PretrainedModel, TinyModel
from workbench.demo.pipeline import DemoResult, ModelKind, Printer, ProposerKind, Stages, run_stages
from workbench.demo.proposers import LearnedProposer, ScriptedProposer


def run_demo(
    cfg: DemoConfig | None = None,
    *,
    fresh: bool = False,
    out: Printer = print,
    model: ModelKind | None = None,
    proposer: ProposerKind | None = None,
) -> DemoResult:
    """Every stage of one variant: the solver's `model` (`TinyModel()` by default, or `PretrainedModel()`) and
    the `proposer` (`ScriptedProposer()` by default, or `LearnedProposer()`); without `cfg`, the variant's
    full-size preset (`DemoConfig.preset`)."""
    model = model or TinyModel()
    proposer = proposer or ScriptedProposer()
    cfg = cfg or DemoConfig.preset(preset_name(model.name, proposer.name))
    model.check(cfg, proposer)
    return run_stages(Stages(cfg, out, fresh, model, proposer))


__all__ = [
    "DemoConfig",
    "DemoResult",
    "LearnedProposer",
    "PretrainedModel",
    "ScriptedProposer",
    "Stages",
    "TinyModel",
    "run_demo",
]
