"""Evaluation: run a solver over a QA set; EM, cover-EM, F1, Avg@k, Pass@k per dataset and hop count."""

from workbench.evaluate.harness import EvalReport, evaluate
from workbench.evaluate.metrics import Judge, answer_scores, pass_at_k, summarize

__all__ = ["EvalReport", "Judge", "answer_scores", "evaluate", "pass_at_k", "summarize"]
