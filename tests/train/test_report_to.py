"""`TrainConfig.report_to`: TRL's logging integrations, offline, in the run's output dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import ConfigError
from workbench.train.config import TrainConfig


def test_report_to_and_vllm_fields_pass_through_to_trl(tmp_path):
    cfg = TrainConfig(
        output_dir=str(tmp_path / "r"),
        report_to=["tensorboard", "trackio"],
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_mask",
    )
    args = cfg.to_grpo_config()
    assert list(args.report_to) == ["tensorboard", "trackio"]
    assert args.project == "r" and args.trackio_static_space_id is False  # nothing goes to the Hub
    assert args.vllm_importance_sampling_correction is True
    assert args.vllm_importance_sampling_mode == "token_mask"
    assert list(TrainConfig(output_dir=str(tmp_path)).to_grpo_config().report_to) == []
    where = cfg.log_locations()
    assert where["metrics"] == str(tmp_path / "r" / "metrics.jsonl")
    assert str(tmp_path / "r" / "tensorboard") in where["tensorboard"]


@pytest.mark.parametrize("bad", [[""], [3], ["tensorboard", None]])
def test_bad_report_to_names_the_fix(bad):
    with pytest.raises(ConfigError, match="report_to"):
        TrainConfig(report_to=bad)


def test_bad_importance_sampling_mode_is_refused():
    with pytest.raises(ConfigError, match="token_truncate"):
        TrainConfig(vllm_importance_sampling_mode="sequence")


def test_a_string_report_to_is_one_integration():
    assert TrainConfig(report_to="tensorboard").report_to == ["tensorboard"]
    assert TrainConfig(report_to="none").report_to == []


@pytest.mark.slow
def test_tensorboard_events_hold_every_logged_step(tiny, tasks, retriever, tmp_path):
    pytest.importorskip(
        "tensorboard",
        reason="TensorBoard logging needs the tensorboard package (a project dependency: `make setup` installs it)",
    )
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.run import train

    model, tok = tiny
    out = tmp_path / "tb"
    cfg = TrainConfig(
        output_dir=str(out),
        report_to=["tensorboard"],
        max_steps=2,
        num_generations=2,
        per_device_train_batch_size=4,
        max_turns=2,
        max_turn_tokens=8,
        max_completion_length=48,
    )
    runner = SearchR1Episodes(retriever, max_turns=2, max_turn_tokens=8, top_k=1, max_total_tokens=48)
    train(cfg, tasks=tasks, episodes=runner, model=model, tokenizer=tok)
    events = list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert events, f"no event file under {out / 'tensorboard'}"
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "train/loss" in tags and "train/reward" in tags
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2]
    assert [e.step for e in acc.Scalars("train/reward")] == [1, 2]
    # the same values as metrics.jsonl
    import json

    jsonl = [json.loads(x) for x in Path(out / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]
    assert [round(e.value, 5) for e in acc.Scalars("train/loss")] == [round(r["loss"], 5) for r in jsonl]
