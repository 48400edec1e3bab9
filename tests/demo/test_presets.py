"""The demo's presets are typed `DemoConfig` values, one per variant and size, and the old preset dicts still read
(with a DeprecationWarning) as the same settings."""

from __future__ import annotations

import itertools

import pytest

from workbench.demo.config import MODES, PRESETS, DemoConfig, preset_name
from workbench.demo.modes import AGENT0_TITLES
from workbench.demo.pipeline import TITLES
from workbench.errors import ConfigError

VARIANTS = list(itertools.product(("tiny", "pretrained"), ("scripted", "learned"), (False, True), MODES))


@pytest.mark.parametrize(("model", "proposer", "fast", "mode"), VARIANTS)
def test_every_variant_has_a_checked_preset_and_titles(model, proposer, fast, mode):
    name = preset_name(model, proposer, fast, mode)
    cfg = DemoConfig.preset(name)
    assert isinstance(cfg, DemoConfig) and cfg == PRESETS[name] and cfg.mode == mode
    assert DemoConfig.from_dict(cfg.to_dict()) == cfg  # every value passes the field types
    assert (model, proposer) in (AGENT0_TITLES if mode == "agent0" else TITLES)
    assert len(PRESETS) == len(VARIANTS)
    assert ("smollm2" in cfg.run_dir) == (model == "pretrained")
    assert ("learned" in cfg.run_dir) == (proposer == "learned")
    if fast:  # a smoke run is smaller than its full-size preset where it counts
        full = PRESETS[preset_name(model, proposer, mode=mode)]
        assert cfg.eval_tasks < full.eval_tasks and cfg.teacher_tasks < full.teacher_tasks


def test_a_preset_is_a_copy_with_changes_and_a_wrong_name_lists_the_presets():
    cfg = DemoConfig.preset("fast", run_dir="runs/x", seed=3)
    assert (cfg.run_dir, cfg.seed, cfg.teacher_tasks) == ("runs/x", 3, PRESETS["fast"].teacher_tasks)
    cfg.proposer_hop_weights[9] = 1.0
    assert 9 not in PRESETS["fast"].proposer_hop_weights
    with pytest.raises(ConfigError, match="fast_smollm2_learned"):
        DemoConfig.preset("quick")
    with pytest.raises(ConfigError, match="tiny or pretrained"):
        preset_name("smollm2", "scripted")


OLD_NAMES = ("FAST", "FAST_LEARNED", "SMOLLM2", "FAST_SMOLLM2", "SMOLLM2_LEARNED", "FAST_SMOLLM2_LEARNED")


@pytest.mark.parametrize(("old", "name"), [(old, old.lower()) for old in OLD_NAMES])
def test_the_old_preset_dicts_warn_and_give_the_same_settings(old, name):
    from workbench.demo import config

    with pytest.warns(DeprecationWarning, match=rf"DemoConfig.preset\('{name}'\)"):
        settings = getattr(config, old)
    run_dir = {"run_dir": "runs/demo_learned"} if old == "FAST_LEARNED" else {}  # the command line gave it
    assert DemoConfig(**settings, **run_dir) == PRESETS[name]
