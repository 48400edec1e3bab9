"""`--model smollm2 --proposer learned`'s presets, and the settings two adapters on one base refuse."""

from __future__ import annotations

import os

import pytest

from workbench.demo import DemoConfig
from workbench.demo.config import check_adapters
from workbench.errors import ConfigError

SMOLLM2, FAST_SMOLLM2 = DemoConfig.preset("smollm2"), DemoConfig.preset("fast_smollm2")
SMOLLM2_LEARNED, FAST_SMOLLM2_LEARNED = DemoConfig.preset("smollm2_learned"), DemoConfig.preset("fast_smollm2_learned")


def test_the_presets_pass_the_check_and_keep_the_smollm2_sizes():
    for preset in (SMOLLM2_LEARNED, FAST_SMOLLM2_LEARNED, DemoConfig.preset("smollm2_learned", engine="vllm")):
        check_adapters(preset)
    assert SMOLLM2_LEARNED.eval_tasks == SMOLLM2.eval_tasks and SMOLLM2_LEARNED.iterations == SMOLLM2.iterations
    assert FAST_SMOLLM2_LEARNED.eval_tasks == FAST_SMOLLM2.eval_tasks
    assert FAST_SMOLLM2_LEARNED.proposer_prompts >= FAST_SMOLLM2_LEARNED.proposer_rl_batch  # one hop group


@pytest.mark.parametrize(
    ("override", "fix"),
    [({"sft_lora_r": 0}, "sft_lora_r > 0"), ({"rl_beta": 0.04}, "rl_beta=0")],
)
def test_settings_one_base_with_two_adapters_cannot_run_name_their_fix(override, fix):
    with pytest.raises(ConfigError, match=fix):
        check_adapters(DemoConfig.preset("smollm2_learned", **override))


def test_the_cli_refuses_compare_sft_with_a_learned_proposer(monkeypatch):
    from workbench.demo.__main__ import ARITHMETIC_ENV, main

    for name, value in {**ARITHMETIC_ENV, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}.items():
        monkeypatch.setenv(name, os.environ.get(name, value))  # what main sets, undone after the test
    with pytest.raises(SystemExit, match="without --proposer learned"):
        main(["--model", "smollm2", "--proposer", "learned", "--compare-sft"])
