"""`SynthesisConfig`: the settings of one QA-synthesis run (`run_synthesis`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.configfile import Config, config_field
from workbench.errors import ConfigError


@dataclass
class SynthesisConfig(Config):
    """Settings of one synthesis run (ASearcher's defaults where it has one)."""

    config_table = "synth"

    run_dir: str = config_field("runs/synth", "Where qa.jsonl (accepted QAs) is written.")
    run_id: str = config_field("", "Run id of the stored trajectories; defaults to run_dir's name.")
    seeds: int = config_field(8, "Seed pages (one synthesis each) when no seed urls are passed.")
    max_edits: int = config_field(16, "Edit turns per synthesis (ASearcher: 16).")
    min_hops: int = config_field(2, "Supporting facts an accepted QA needs at least.")
    direct_attempts: int = config_field(8, "No-tool answers per verification (ASearcher: 8).")
    direct_temperature: float = config_field(0.6, "Sampling temperature of the no-tool answers (ASearcher: 0.6).")
    max_direct_accuracy: float = config_field(0.25, "An edit is too easy above this share of right no-tool answers.")
    seed: int = config_field(0, "Seed for picking seed pages and seed facts.")
    iteration: int = config_field(0, "Recorded on every synthesis (self-evolution iterations).")

    def validate(self) -> None:
        for name in ("seeds", "max_edits", "min_hops", "direct_attempts"):
            if getattr(self, name) < 1:
                raise ConfigError(f"SynthesisConfig.{name} must be >= 1")
        if not 0.0 <= self.max_direct_accuracy <= 1.0:
            raise ConfigError("SynthesisConfig.max_direct_accuracy must be in [0, 1]")

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or Path(self.run_dir).name


__all__ = ["SynthesisConfig"]
