"""The SmolLM2 demo's tables: per-hop accuracy with its interval per stage, and each change between stages."""

from __future__ import annotations

import pytest

from workbench.demo.report import StageEval, change_rows, stage_rows, stages_table


def _stage(name: str, correct: list[float]) -> StageEval:
    ids = [f"q{i}" for i in range(len(correct))]
    return StageEval(name, [], dict(zip(ids, correct, strict=True)), {q: 1 + i % 2 for i, q in enumerate(ids)})


def test_stage_rows_per_hop_and_changes_between_stages():
    sft = _stage("eval_sft", [1.0, 0.0] * 20)  # every 1-hop question right, every 2-hop wrong
    rl = _stage("eval_final", [1.0] * 40)
    rows = {r["hops"]: r for r in stage_rows(sft)}
    assert (rows["1"]["correct"], rows["2"]["correct"], rows["all"]["questions"]) == (20, 0, 40)
    changes = {r["hops"]: r for r in change_rows([sft, rl])}
    assert changes["2"]["change"] == 1.0 and changes["2"]["excludes_zero"]
    assert changes["1"]["change"] == 0.0 and not changes["1"]["excludes_zero"]
    assert "100.0% [" in stages_table([sft, rl])
    with pytest.raises(ValueError, match="different questions"):
        change_rows([sft, _stage("other", [1.0] * 3)])
