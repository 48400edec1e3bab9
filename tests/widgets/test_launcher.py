"""TrainingLauncher: the form maps onto TrainConfig; launch/stop a real tiny run in a child."""

from __future__ import annotations

import json
import time

import pytest

from workbench.errors import ConfigError
from workbench.train import TrainConfig
from workbench.widgets import TrainingLauncher


def test_form_is_the_config(tmp_path):
    ui = TrainingLauncher(model_path="m", tasks_path="t.jsonl", max_steps=3, refresh_s=0)
    assert ui.config == TrainConfig(model_path="m", tasks_path="t.jsonl", max_steps=3)
    ui.fields["estimator"].value = "hrpo"  # as the dropdown would
    ui.set(learning_rate=1e-4, extra_grpo_args={"seed": 3})
    cfg = ui.config
    assert (cfg.estimator, cfg.learning_rate, cfg.extra_grpo_args) == ("hrpo", 1e-4, {"seed": 3})
    assert ui.fields["learning_rate"].tooltip.startswith("Peak learning rate")

    path = tmp_path / "train.toml"
    path.write_text('model_path = "m2"\nestimator = "adpo"\n')
    assert TrainingLauncher(path, max_steps=7, refresh_s=0).config.max_steps == 7

    ui.set(per_device_train_batch_size=3)  # not a multiple of num_generations
    with pytest.raises(ConfigError, match="per_device_train_batch_size"):
        _ = ui.config
    ui.launch_button.click()  # the button shows it, no crash
    assert "per_device_train_batch_size" in ui.status.value and ui.handle is None
    with pytest.raises(ConfigError, match="no field"):
        ui.set(colour="red")
    with pytest.raises(ConfigError, match="nothing to stop"):
        ui.stop()


def test_input_paths_are_checked_before_launch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a notebook (and so the run) resolves relative paths
    (tmp_path / "tasks.jsonl").write_text("{}\n")
    ui = TrainingLauncher(model_path="runs/demo/final_model", tasks_path="tasks.jsonl", refresh_s=0)
    assert "model_path: runs/demo/final_model does not exist under" in ui.status.value
    assert "tasks_path" not in ui.status.value and "Hugging Face model id" in ui.status.value
    (tmp_path / "runs" / "demo" / "final_model").mkdir(parents=True)
    ui.set(corpus_path="corpus.jsonl")  # a field change checks again
    assert "model_path" not in ui.status.value and "corpus_path: corpus.jsonl does not exist" in ui.status.value
    empty = ui.curves.figure
    assert "after launch: reward, loss" in empty.layout.annotations[0].text and not empty.layout.xaxis.visible


@pytest.fixture(scope="module")
def tiny_inputs(tmp_path_factory):
    from workbench.models.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("launch")
    docs = [("Paris", "Paris is the capital of France."), ("Rome", "Rome is the capital of Italy.")]
    texts = [f"{t}: {d}" for t, d in docs] + ["<search> capital </search> <answer> Paris </answer>"]
    model = build_tiny_model(
        root / "model", texts * 4, vocab_size=320, n_layer=2, n_embd=32, n_head=2, max_positions=512, seed=0
    )
    (root / "tasks.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "id": f"t{i}",
                    "question": f"What is the capital of {c}?",
                    "golden_answers": [a],
                    "metadata": {"hops": 1 + i % 2},
                }
            )
            + "\n"
            for i, (c, a) in enumerate([("France", "Paris"), ("Italy", "Rome")] * 2)
        )
    )
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "contents": f'"{t}"\n{d}'}) + "\n" for i, (t, d) in enumerate(docs))
    )
    return root, model


@pytest.mark.slow
def test_launch_shows_live_curves_and_stops(tiny_inputs, tmp_path):
    """An asynchronous run launched from the form: reward and staleness curves appear live, then it stops."""
    root, model = tiny_inputs
    ui = TrainingLauncher(
        model_path=str(model),
        tasks_path=str(root / "tasks.jsonl"),
        corpus_path=str(root / "corpus.jsonl"),
        output_dir=str(tmp_path / "run"),
        store_path=str(tmp_path / "run"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=500,
        max_turns=2,
        max_turn_tokens=12,
        max_completion_length=64,
        async_rollouts=True,
        max_staleness=1,
        refresh_s=0.5,
    )
    handle = ui.launch()
    assert ui.launch_button.disabled and not ui.stop_button.disabled
    deadline = time.time() + 240
    while time.time() < deadline and handle.status in ("starting", "running"):
        names = {t.name for t in ui.curves.figure.data}  # redrawn by auto-refresh
        if "reward" in names and len(ui.curves.figure.data[0].x) >= 1:
            break
        time.sleep(0.5)
    assert {"reward", "async/staleness/mean", "async/trainer_wait_s"} <= {t.name for t in ui.curves.figure.data}, (
        handle.log_tail()
    )
    assert "latest trajectories" in ui.samples_view.value
    ui.stop_button.click()
    assert handle.status == "stopped", handle.log_tail()
    assert "stopped" in ui.status.value and not ui.launch_button.disabled
    time.sleep(1.5)
    assert ui._ticker is None or not ui._ticker.running  # auto-refresh ended with the run
