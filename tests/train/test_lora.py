"""LoRA (peft) in GRPO: real TRL steps on the tiny local model train only the adapter, the KL reference
is the adapter disabled, and checkpoints hold the adapter alone and resume."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from workbench.errors import ConfigError
from workbench.train.config import TrainConfig
from workbench.train.episodes import SearchR1Episodes
from workbench.train.lora import ADAPTER_FILES, AGENT_SETTINGS_FILE, ALL_LINEAR, is_adapter_dir, lora_config
from workbench.trajectory import Trajectory


def spread_reward(traj: Trajectory) -> dict[str, float]:
    """Rewards that differ between rollouts: the share of distinct tokens in the first turn."""
    ids = traj.steps[0].completion_ids if traj.steps else []
    return {"total": len(set(ids)) / max(len(ids), 1)}


def lora_trainer(tmp_path, model_dir, tasks, retriever, **kw):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.train.trainer import WorkbenchGRPOTrainer

    torch.manual_seed(1234)
    base = dict(
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        learning_rate=1e-2,
        max_completion_length=96,
        max_turns=2,
        max_turn_tokens=16,
        lora_r=4,
        lora_alpha=8,
    )
    cfg = TrainConfig(**{**base, **kw})
    runner = SearchR1Episodes(retriever, max_turns=2, max_turn_tokens=16, max_total_tokens=96)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    return WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg, reward=spread_reward)


def base_name(peft_name: str) -> str:
    """A wrapped base weight's name in the plain model (peft adds a prefix and `.base_layer`)."""
    return peft_name.removeprefix("base_model.model.").replace(".base_layer", "")


def test_lora_config_follows_the_train_config():
    assert lora_config(TrainConfig()) is None
    cfg = lora_config(TrainConfig(lora_r=8, lora_alpha=32, lora_dropout=0.1))
    assert cfg is not None and (cfg.r, cfg.lora_alpha, cfg.lora_dropout) == (8, 32, 0.1)
    assert cfg.target_modules == ALL_LINEAR
    named = lora_config(TrainConfig(lora_r=2, lora_target_modules=["q_proj", "v_proj"]))
    assert named is not None and set(named.target_modules) == {"q_proj", "v_proj"}
    with pytest.raises(ConfigError, match="lora_r"):
        TrainConfig(lora_r=-1)
    with pytest.raises(ConfigError, match="lora_dropout"):
        TrainConfig(lora_r=4, lora_dropout=1.0)


@pytest.mark.slow
def test_a_lora_grpo_step_changes_only_adapter_tensors(tmp_path, tiny_model_dir, tasks, retriever):
    from transformers import AutoModelForCausalLM

    before = dict(AutoModelForCausalLM.from_pretrained(tiny_model_dir).named_parameters())
    trainer = lora_trainer(tmp_path, tiny_model_dir, tasks, retriever, beta=0.04, max_steps=2)
    adapter_before = {k: v.detach().clone() for k, v in trainer.model.named_parameters() if "lora_" in k}
    result = trainer.train()

    assert trainer.state.global_step == 2 and torch.isfinite(torch.tensor(result.training_loss))
    # the KL reference is the same weights with the adapter disabled: no second model, no "ref" adapter
    assert trainer.ref_model is None and list(trainer.model.peft_config) == ["default"]
    kl = [row["kl"] for row in trainer.state.log_history if "kl" in row]
    assert kl and all(torch.isfinite(torch.tensor(v)) for v in kl)
    params = dict(trainer.model.named_parameters())
    base = {base_name(k): v for k, v in params.items() if "lora_" not in k}
    assert base.keys() == before.keys()
    assert all(torch.equal(base[k], before[k]) for k in before), "a base weight moved"
    assert not any(v.requires_grad for v in base.values())
    assert any(not torch.equal(adapter_before[k], params[k]) for k in adapter_before), "the adapter did not train"


@pytest.mark.slow
def test_a_lora_checkpoint_holds_the_adapter_only_and_resumes(tmp_path, tiny_model_dir, tasks, retriever):
    trainer = lora_trainer(tmp_path, tiny_model_dir, tasks, retriever, save_steps=1)
    trainer.train()
    ckpt = tmp_path / "out" / "checkpoint-1"
    assert is_adapter_dir(ckpt) and all((ckpt / f).is_file() for f in ADAPTER_FILES)
    assert not list(ckpt.glob("model*.safetensors")) and not list(ckpt.glob("pytorch_model*"))
    saved = load_file(str(ckpt / "adapter_model.safetensors"))
    assert saved and all("lora_" in k for k in saved)

    # a fresh base model resumed from the checkpoint starts its next step from the checkpoint's adapter
    from transformers import TrainerCallback

    seen: dict[str, torch.Tensor] = {}

    class FirstStep(TrainerCallback):
        def on_step_begin(self, args, state, control, model=None, **kwargs):
            if not seen:
                named = model.named_parameters()
                seen.update({k.replace(".default", ""): v.detach().clone() for k, v in named if "lora_" in k})

    again = lora_trainer(tmp_path, tiny_model_dir, tasks, retriever, save_steps=1, max_steps=2)
    again.add_callback(FirstStep())
    again.train(resume_from_checkpoint=str(ckpt))
    assert again.state.global_step == 2
    assert seen.keys() == saved.keys()
    assert all(torch.equal(seen[k], saved[k]) for k in saved)
    assert any(saved[k].abs().sum() > 0 for k in saved if "lora_B" in k)  # not the zero init by chance


def test_merge_writes_a_plain_model_whose_logits_equal_base_plus_adapter(tmp_path, tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.cli import main
    from workbench.models.load import load_causal_lm

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    wrapped = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=ALL_LINEAR, init_lora_weights=False))
    wrapped.save_pretrained(str(tmp_path / "adapter"))
    ids = torch.tensor([[5, 17, 42, 99, 7, 3]])
    with torch.no_grad():
        expected = wrapped(ids).logits
        with wrapped.disable_adapter():
            plain = wrapped(ids).logits
    assert not torch.allclose(expected, plain)  # the adapter changes the output

    assert main(["models", "merge", str(tmp_path / "adapter"), "--out", str(tmp_path / "merged")]) == 0
    assert not is_adapter_dir(tmp_path / "merged")
    merged, tok, _ = load_causal_lm(str(tmp_path / "merged"), device="cpu", dtype="float32")
    with torch.no_grad():
        got = merged(ids).logits
    assert torch.allclose(got, expected, atol=1e-5)
    text = "Paris is the capital of France."
    assert tok(text).input_ids == AutoTokenizer.from_pretrained(tiny_model_dir)(text).input_ids


def test_merge_names_the_fix_for_a_directory_without_an_adapter(tmp_path, tiny_model_dir):
    from workbench.train.lora import merge_adapter

    with pytest.raises(ConfigError, match="no peft adapter"):
        merge_adapter(tiny_model_dir, tmp_path / "merged")


def test_sft_on_a_lora_model_trains_the_adapter_alone(tmp_path, tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.train.lora import wrap_lora
    from workbench.train.sft import sft
    from workbench.trajectory import Step, Task

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids = tok.encode("<answer> Paris </answer>")
    traj = Trajectory(
        task=Task("q", "Capital of France?", ["Paris"]),
        steps=[Step(index=0, raw="<answer> Paris </answer>", prompt_ids=ids[:2], completion_ids=ids)],
    )
    model = wrap_lora(AutoModelForCausalLM.from_pretrained(tiny_model_dir), TrainConfig(lora_r=4, lora_alpha=8))
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    losses = sft(model, tok, [traj] * 4, epochs=2, lr=1e-2, batch_size=2, progress=False)
    assert losses and all(torch.isfinite(torch.tensor(x)) for x in losses)
    after = dict(model.named_parameters())
    assert all(torch.equal(before[k], v) for k, v in after.items() if "lora_" not in k)
    assert any(not torch.equal(before[k], v) for k, v in after.items() if "lora_" in k)
    model.save_pretrained(str(tmp_path / "sft"))
    assert is_adapter_dir(tmp_path / "sft") and not list((tmp_path / "sft").glob("model*.safetensors"))
    with pytest.raises(ConfigError, match="lora_r"):
        wrap_lora(AutoModelForCausalLM.from_pretrained(tiny_model_dir), TrainConfig())


@pytest.mark.slow
def test_a_lora_run_ends_in_an_adapter_that_merges_into_its_base(tmp_path, tiny_model_dir, tasks, retriever):
    """final/ and every checkpoint-N are adapters carrying the agent settings the run trained under."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from workbench.train.lora import adapter_base, merge_adapter
    from workbench.train.run import train

    cfg = TrainConfig(
        output_dir=str(tmp_path / "run"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=1,
        learning_rate=1e-2,
        max_completion_length=96,
        max_turns=2,
        max_turn_tokens=16,
        lora_r=4,
        lora_alpha=8,
        save_steps=1,
    )
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    model.config.workbench_agent = trained_under = {"prompt": "compact", "max_context_tokens": 480}
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    runner = SearchR1Episodes(retriever, max_turns=2, max_turn_tokens=16, max_total_tokens=96)
    final = train(cfg, tasks=tasks, episodes=runner, model=model, tokenizer=tok, reward=spread_reward)["final_dir"]
    assert is_adapter_dir(final) and not list((tmp_path / "run" / "final").glob("model*.safetensors"))
    assert adapter_base(final) == str(tiny_model_dir)  # the base the adapter names
    merged = AutoModelForCausalLM.from_pretrained(merge_adapter(final, tmp_path / "merged"))
    from workbench.agent.config import read_model_settings

    assert read_model_settings(tmp_path / "merged") == trained_under  # `eval --policy` runs it as trained
    checkpoint = tmp_path / "run" / "checkpoint-1"
    assert is_adapter_dir(checkpoint) and json.loads((checkpoint / AGENT_SETTINGS_FILE).read_text()) == trained_under
    assert read_model_settings(merge_adapter(checkpoint, tmp_path / "merged-1")) == trained_under
    ids = torch.tensor([tok.encode("Paris is the capital of France.")])
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, model(ids).logits, atol=1e-5)  # `model` holds base+adapter
