"""The CPU demo's pieces, and a smoke run of every stage with tiny sizes."""

from __future__ import annotations

import json

import pytest

from workbench.demo.data import SUBMIT_TURN, sft_mix, short_horizon_twin
from workbench.policies.base import ByteCodec
from workbench.train.sft import sequences
from workbench.trajectory import Step, Task, Trajectory


def _teacher_traj(hops: int) -> Trajectory:
    codec = ByteCodec()
    traj = Trajectory(task=Task("q", "What is the country of the birthplace of X?", ["C"], {"hops": hops}))
    for i in range(hops + 2):  # plan, one turn per hop, submit
        raw = f"<think>turn {i}</think><code>print({i})</code>"
        traj.steps.append(
            Step(
                index=i,
                raw=raw,
                completion_ids=codec.encode(raw),
                prompt_ids=[1, 2] if i == 0 else None,
                observation={"stdout": f"E{i} | todo: 1\n"},
                observation_ids=codec.encode(f"<output>E{i}</output>"),
            )
        )
    return traj


def test_short_horizon_twin_keeps_the_prefix_and_submits_after_one_hop():
    codec = ByteCodec()
    full = _teacher_traj(3)
    twin = short_horizon_twin(full, codec)
    assert [s.raw for s in twin.steps[:2]] == [s.raw for s in full.steps[:2]]
    assert twin.steps[2].raw == SUBMIT_TURN and twin.steps[2].completion_ids == codec.encode(SUBMIT_TURN)
    assert twin.final_answer == "E1"  # the first hop's value, printed by turn 1
    assert short_horizon_twin(_teacher_traj(1), codec) is None
    seg = twin.segments()[0]
    assert seg["completion_ids"][: len(full.steps[0].completion_ids)] == full.steps[0].completion_ids


def test_sft_mix_draws_twins_at_the_give_up_rate():
    codec = ByteCodec()
    trajs = [_teacher_traj(2) for _ in range(400)]
    mixed = sft_mix(trajs, codec, give_up=0.7, copies=2, seed=0)
    short = sum(t.metadata.get("teacher") == "short-horizon" for t in mixed)
    assert len(mixed) == 800 and 0.65 < short / 800 < 0.75
    assert all(
        t.metadata.get("teacher") is None for t in sft_mix([_teacher_traj(1)], codec, give_up=1.0, copies=3, seed=0)
    )


def test_sft_sequences_train_on_model_tokens_only():
    traj = _teacher_traj(1)
    [(ids, mask)] = sequences([traj])
    seg = traj.segments()[0]
    assert ids == seg["prompt_ids"] + seg["completion_ids"]
    assert mask[:2] == [0, 0] and sum(mask) == sum(len(s.completion_ids) for s in traj.steps)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every stage twice (the second from the cache); minutes on a busy machine
@pytest.mark.xdist_group("readme")  # the first run is the session's smoke demo, shared with the README test
def test_demo_smoke_run_every_stage_and_cache(fast_demo, torch_threads, tmp_path):
    import shutil

    from workbench.demo import DemoConfig, ScriptedProposer, Stages, TinyModel

    run, result, lines = fast_demo.run_dir, fast_demo.result, list(fast_demo.lines)
    summary = json.loads((run / "summary.json").read_text())
    assert {r["hops"] for r in summary["before"]} >= {"all"} and summary["evolution"]
    for store in ("eval_sft", "eval_final", "evolve"):
        assert (run / store / "trajectories.sqlite").exists()
    assert any("held-out accuracy" in line for line in lines)
    assert (run / "final_model" / "config.json").exists()
    # the tokenizer learned the teacher's code: a hop cell is a few words' worth of tokens, not bytes
    from transformers import AutoTokenizer

    from workbench.worlds.scripted.coder import HOP_TURN

    tok = AutoTokenizer.from_pretrained(run / "final_model")
    assert len(tok(HOP_TURN)["input_ids"]) < len(HOP_TURN) / 3
    # a second run reuses the model, the teacher trajectories, the SFT weights and the SFT model's
    # evaluation (in a copy of the run dir: the shared one stays as the first run left it); stages 5-6
    # have nothing to reuse, so the second run stops after stage 4
    shutil.copytree(run, tmp_path / "demo")
    cfg = DemoConfig.preset("fast", run_dir=str(tmp_path / "demo"), torch_threads=torch_threads)
    again = Stages(cfg, lines.append, fresh=False, model=TinyModel(), proposer=ScriptedProposer())
    [before] = TinyModel().solver_stages(again).evals
    assert before == result.before
    for stage in ("1.", "2.", "3.", "4."):
        first = next(v for k, v in result.seconds.items() if k.startswith(stage))
        second = next(v for k, v in again.seconds.items() if k.startswith(stage))
        assert second < first


def test_short_horizon_twin_submits_in_the_context_hop_two_saw():
    """When the notepad block moved before hop 2, hop 2's turn records its whole prompt; the twin's
    submit turn stands in that same context, so SFT never trains it beside a stale notepad."""
    codec = ByteCodec()
    full = _teacher_traj(3)
    full.steps[2].prompt_ids = [7, 8, 9]  # the context was rebuilt before hop 2
    twin = short_horizon_twin(full, codec)
    assert twin.steps[2].prompt_ids == [7, 8, 9]
    assert twin.segments()[-1]["prompt_ids"] == [7, 8, 9]
