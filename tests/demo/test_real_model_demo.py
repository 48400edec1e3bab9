"""`python -m workbench.demo --model smollm2` at smoke size, end to end: the real SmolLM2-135M-Instruct
(converted once per session, shared with tests/models/test_smollm2.py), real kernels, one SFT step,
one GRPO step; every stage evaluated on the same held-out questions. No learning is expected."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1800)  # every stage with the real 135M model and real kernels: minutes on a busy machine
def test_smollm2_demo_runs_every_stage_on_one_held_out_set(smollm2_models, torch_threads, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from workbench.demo import DemoConfig, PretrainedModel, run_demo

    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(smollm2_models))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_dir = tmp_path / "runs" / "demo_smollm2"
    lines: list[str] = []
    cfg = DemoConfig.preset("fast_smollm2", run_dir=str(run_dir), torch_threads=torch_threads)
    result = run_demo(cfg, out=lines.append, model=PretrainedModel())

    zero, sft, final = result.stages
    assert sft.correct.keys() == zero.correct.keys()
    assert [s.name for s in result.stages] == ["eval_zero_shot", "eval_sft", "eval_final"]
    assert len(zero.correct) == cfg.eval_tasks and zero.correct.keys() == final.correct.keys()
    assert all(s.format["turns"] >= len(s.correct) for s in result.stages)  # every episode took a turn
    for change in result.changes:
        assert change["low"] <= change["change"] <= change["high"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert list(summary["stages"]) == ["eval_zero_shot", "eval_sft", "eval_final"]
    assert summary["stages"]["eval_final"][-1]["hops"] == "all" and summary["evolution"]
    assert any("interval" in line or "points [" in line for line in lines)
    assert any(" 1 GRPO steps on " in line for line in lines)  # the solver's update ran
    # SFT moved the weights (a GRPO step may not: with equal rewards in a group its advantages are 0)
    base = load_file(smollm2_models / "smollm2-135m-instruct" / "model.safetensors")
    [sft_dir] = (run_dir / "cache").glob("sft-*")
    name = "model.layers.0.self_attn.q_proj.weight"
    assert not base[name].equal(load_file(sft_dir / "model.safetensors")[name])
    assert (run_dir / "final_model" / "model.safetensors").is_file()
