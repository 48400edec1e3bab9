"""`python -m workbench.demo --model smollm2 --proposer learned` at smoke size, end to end: the real
SmolLM2-135M-Instruct (converted once per session, shared with the other SmolLM2 tests) with a LoRA adapter
per role, real kernels, an SFT of each adapter, one HRPO step on the proposer's adapter, GRPO on the solver's
when QA generation yields a question, 2 held-out questions before and after. No learning is expected."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1800)  # every stage with the real 135M model and real kernels: minutes on a busy machine
def test_smollm2_with_a_learned_proposer_runs_every_stage(smollm2_models, torch_threads, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from workbench.demo import DemoConfig, LearnedProposer, PretrainedModel, run_demo

    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(smollm2_models))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_dir = tmp_path / "runs" / "demo_smollm2_learned"
    lines: list[str] = []
    cfg = DemoConfig.preset("fast_smollm2_learned", run_dir=str(run_dir), torch_threads=torch_threads)
    result = run_demo(cfg, out=lines.append, model=PretrainedModel(), proposer=LearnedProposer())

    sft, final = result.stages
    assert len(sft.correct) == cfg.eval_tasks and sft.correct.keys() == final.correct.keys()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["proposer"] == "learned" and list(summary["stages"]) == ["eval_sft", "eval_final"]
    [it] = summary["evolution"]
    update = it["proposer_update"]
    assert update["global_step"] == 1, update  # one HRPO step on the proposer's adapter
    [batch] = update["rollouts"]
    assert {"format", "difficulty", "valid", "answerable"} <= set(batch["1"]) and batch["1"]["proposals"] == 2
    [questions] = summary["proposer_questions"]
    assert questions["hrpo_rollouts"]["1"]["proposals"] == 2
    assert questions["qa_generation"]["all"]["proposals"] == cfg.proposer_prompts
    assert any("HRPO steps on the proposer" in line for line in lines)
    check = summary["coevolution"]  # with adapters: the first weights loaded into each role, the live ones back after
    assert len(check["proposer_difficulty"]["first"]) == 1 and len(check["heldout"]["first"]) == cfg.eval_tasks
    assert lines[-2].startswith("proposer difficulty: ") and lines[-1].startswith("held-out accuracy: ")
    assert any(line.startswith("    hop 1: HRPO rollouts") for line in lines)
    # GRPO on the solver's adapter runs when QA generation gave a valid question (at 64-token turns it rarely does)
    grpo = [line for line in lines if " GRPO steps on " in line]
    assert grpo == ([f"  iteration 0: 1 GRPO steps on {it['qa_size']} questions"] if it["qa_size"] else []), grpo
    # each SFT trained its own adapter: both moved off LoRA's zero start, differently
    adapters = {
        role: load_file(next((run_dir / "cache").glob(f"{role}-adapter-*")) / role / "adapter_model.safetensors")
        for role in ("solver", "proposer")
    }
    name = next(k for k in adapters["solver"] if "q_proj.lora_B" in k)
    assert adapters["solver"][name].abs().sum() > 0 and adapters["proposer"][name].abs().sum() > 0
    assert not adapters["solver"][name].equal(adapters["proposer"][name])
    for role in ("solver", "proposer"):
        assert (run_dir / "final_adapters" / role / "adapter_model.safetensors").is_file()
