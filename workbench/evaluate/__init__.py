"""Evaluation: run a solver over a QA set; EM, cover-EM, F1, Avg@k, Pass@k per dataset and hop count."""

from workbench.evaluate.harness import evaluate
from workbench.evaluate.metrics import pass_at_k, summarize

__all__ = ["evaluate", "pass_at_k", "summarize"]
