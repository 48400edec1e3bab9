"""Both roles learning on the toy model with the hop proposer, at smoke size: every stage runs for real (the
demo's solver stages, the hop proposer's SFT, one Dr. Zero iteration with HRPO and GRPO, the held-out evaluation,
the checks), the iteration-0 weights are kept, the checks' episodes are stored by side, and the last two lines
are the ones scripts read."""

from __future__ import annotations

import re

import pytest


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every stage with real kernels: minutes on a busy machine
def test_a_smoke_run_prints_both_checks_last(tmp_path, torch_threads):
    from transformers import AutoModelForCausalLM

    from workbench.demo.hop_coevolution import HopCoevolution, run_hop_coevolution
    from workbench.store import Store

    lines: list[str] = []
    run = HopCoevolution(
        run_dir=str(tmp_path / "run"),
        preset="fast",
        iterations=1,
        prompts_per_iteration=4,
        solver_attempts=2,
        check_prompts=4,
        check_samples=1,
        overrides={"torch_threads": torch_threads},
        proposer={"teacher_prompts": 8, "sft_epochs": 1, "hrpo_steps": 1, "hrpo_batch": 4, "hop_group": 2},
    )
    result = run_hop_coevolution(run, out=lines.append)
    number = r"[+-]?\d+\.\d+"
    assert re.fullmatch(
        rf"proposer difficulty: {number} -> {number} \(change {number} \[{number}, {number}\]\)", lines[-2]
    )
    assert re.fullmatch(
        rf"held-out accuracy: {number}% -> {number}% \(change {number} \[{number}, {number}\]\)", lines[-1]
    )
    assert lines[-2] == result.proposer.line() and lines[-1] == result.heldout.line()
    assert len(result.proposer.first) == len(result.proposer.last) == 4  # one score per check prompt, paired
    assert len(result.heldout.first) == len(result.heldout.last) == 12  # the fast preset's held-out questions
    assert [row["iteration"] for row in result.evolution] == [0]
    kept = tmp_path / "run" / "iteration0"
    for role in ("proposer", "solver"):  # the first weights, loadable
        assert AutoModelForCausalLM.from_pretrained(kept / role).num_parameters() > 0
    with Store.open_readonly(tmp_path / "run" / "coevolution_check") as store:
        proposals = [t for t in store.iter_trajectories() if t.role == "proposer"]
    by_side = {side: [t for t in proposals if t.lineage.get("phase") == side] for side in ("check_first", "check_last")}
    assert [len(v) for v in by_side.values()] == [4, 4]
    assert {t.task.metadata["iteration"] for t in by_side["check_first"]} == {-1}
    assert {t.task.metadata["iteration"] for t in by_side["check_last"]} == {1}
    first_prompts = sorted(t.task.metadata["prompt_index"] for t in by_side["check_first"])
    assert first_prompts == sorted(t.task.metadata["prompt_index"] for t in by_side["check_last"]) == [0, 1, 2, 3]
