"""The CPU demo (`make demo`, `python -m workbench.demo`): a tiny model learns to be an NB-Agent.

A tiny causal LM is built locally (a tokenizer trained on a synthetic world's text, a random 2-layer
Qwen2), warmed with SFT on a scripted teacher's trajectories (real sandboxed kernels, real search),
evaluated on held-out questions, improved by self-evolution with GRPO, and evaluated again.
"""

from workbench.demo.config import FAST, DemoConfig
from workbench.demo.pipeline import run_demo

__all__ = ["FAST", "DemoConfig", "run_demo"]
