"""`python -m workbench.demo --proposer learned`: the proposer's pieces, and a smoke run of both roles learning."""

from __future__ import annotations

import json

import pytest

from workbench.demo.learned import hop_stats, proposer_lines, whole_hop_groups
from workbench.trajectory import Task, Trajectory


def _proposer(hops: int, fmt: float, difficulty: float) -> Trajectory:
    traj = Trajectory(task=Task(f"p{hops}-{fmt}-{difficulty}", "prompt", [], {"hops": hops}), role="proposer")
    traj.rewards = {"format": fmt, "difficulty": difficulty, "total": 0.5 * fmt + difficulty}
    return traj


def test_hop_stats_average_format_and_difficulty_per_hop():
    stats = hop_stats([_proposer(1, 1.0, 0.0), _proposer(1, 0.5, 1.0), _proposer(3, 0.75, 0.5)])
    # hop 1: totals 0.5·1 + 0 = 0.5 and 0.5·0.5 + 1 = 1.25, spread 0.75; hop 3 alone: spread 0
    assert stats["1"] == {"proposals": 2.0, "format": 0.75, "difficulty": 0.5, "spread": 0.75}
    assert stats["3"] == {"proposals": 1.0, "format": 0.75, "difficulty": 0.5, "spread": 0.0}
    assert stats["all"]["proposals"] == 3.0 and stats["all"]["format"] == pytest.approx(2.25 / 3)
    assert list(stats) == ["1", "3", "all"]


def test_whole_hop_groups_leave_out_hops_with_too_few_prompts():
    tasks = [Task(str(i), "q", [], {"hops": h}) for i, h in enumerate([1, 1, 1, 2, 3, 3])]
    kept, left = whole_hop_groups(tasks, 2)
    assert [t.id for t in kept] == ["0", "1", "2", "4", "5"] and left == [2]
    assert whole_hop_groups(tasks, 4) == ([], [1, 2, 3])


def test_proposer_lines_show_rollouts_and_qa_generation_per_hop():
    it = {"iteration": 0, "qa_size": 3, "evolve/format/hop1": 0.9, "evolve/difficulty/hop1": 0.25,
          "evolve/solver_pass_rate/hop1": 0.5,
          "proposer_update": {"rollouts": [{"1": {"proposals": 2.0, "format": 0.5, "difficulty": 0.0},
                                            "2": {"proposals": 2.0, "format": 0.25, "difficulty": 0.0}},
                                           {"1": {"proposals": 2.0, "format": 0.75, "difficulty": 0.5}}]}}
    lines = proposer_lines([it])
    assert lines[0] == "  iteration 0: 3 questions in the QA set"
    assert "format 0.50 → 0.75" in lines[1] and "difficulty 0.00 → 0.50" in lines[1]
    assert "QA generation format 0.90, difficulty 0.25, solver pass rate 50.0%" in lines[1]
    assert lines[2].startswith("    hop 2:") and "0.25 →   - " in lines[2]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every stage of the demo with real kernels: minutes on a busy machine
def test_learned_proposer_smoke_run(tmp_path):
    """SFT on the scripted proposer, one HRPO update of the proposer, per-hop metrics.

    HRPO moves the weights exactly when some hop's rollout rewards differ (otherwise every advantage
    is 0): the check holds the update to that rule either way. With FAST's two SFT steps the proposer
    rarely writes a valid question, so a flat batch (no change) is the common case here."""
    import torch
    from transformers import AutoModelForCausalLM

    from workbench.demo import DemoConfig
    from workbench.demo.config import FAST_LEARNED
    from workbench.demo.learned import run_learned_demo

    lines: list[str] = []
    run = tmp_path / "learned"
    run_learned_demo(DemoConfig(run_dir=str(run), **FAST_LEARNED), out=lines.append)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["proposer"] == "learned"
    assert summary["proposer_sft_losses"][1] < summary["proposer_sft_losses"][0]
    [it] = summary["proposer_per_iteration"]
    update = summary["evolution"][0]["proposer_update"]
    assert update["global_step"] == 1 and update["rollouts"], update
    assert it["per_hop"] and all({"format", "difficulty", "solver_pass_rate"} <= set(v) for v in it["per_hop"].values())
    assert any("HRPO steps on the proposer" in line for line in lines)
    assert any("QA generation format" in line for line in lines)
    [sft_dir] = [p for p in (run / "cache").iterdir() if p.name.startswith("proposer-sft-")]
    before = AutoModelForCausalLM.from_pretrained(sft_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(run / "final_proposer").state_dict()
    moved = any(not torch.equal(before[k], after[k]) for k in before)
    varied = any(stats["spread"] > 0 for batch in update["rollouts"] for h, stats in batch.items() if h != "all")
    assert moved == varied, (moved, update["rollouts"])
