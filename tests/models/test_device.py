"""Device and precision default to auto; TrainConfig.device replaces use_cpu (still accepted, with a
DeprecationWarning); gradient_checkpointing reaches TRL."""

from __future__ import annotations

import pytest
import torch

from workbench.errors import ConfigError
from workbench.models import pick_device, pick_dtype
from workbench.train import TrainConfig


def test_auto_is_a_gpu_when_one_is_visible_else_the_cpu_in_float32():
    gpu = torch.cuda.is_available()
    device = pick_device("auto")
    assert device == ("cuda" if gpu else "cpu")
    want = torch.bfloat16 if gpu and torch.cuda.is_bf16_supported() else torch.float32
    assert pick_dtype("auto", device) == want
    assert pick_dtype("auto", "cpu") == torch.float32 and pick_dtype("float16", "cpu") == torch.float16
    with pytest.raises(ConfigError, match="unknown dtype"):
        pick_dtype("float33", "cpu")
    with pytest.raises(ConfigError, match="unknown device"):
        pick_device("tpu")


def test_train_config_device_reaches_trl():
    config = TrainConfig(gradient_checkpointing=True)
    assert config.device == "auto"
    grpo = config.to_grpo_config()
    assert grpo.use_cpu == (not torch.cuda.is_available())
    assert grpo.gradient_checkpointing is True
    assert TrainConfig(device="cpu").to_grpo_config().use_cpu is True
    with pytest.raises(ConfigError, match="device"):
        TrainConfig(device="gpu")


def test_use_cpu_is_a_deprecated_alias_of_device_cpu():
    with pytest.warns(DeprecationWarning, match="device='cpu'"):
        config = TrainConfig(use_cpu=True)
    assert (config.device, config.use_cpu) == ("cpu", True)
    assert "use_cpu" not in config.to_dict()  # saved configs carry device only
    with pytest.warns(DeprecationWarning):
        assert TrainConfig.from_dict({"use_cpu": True}).device == "cpu"
