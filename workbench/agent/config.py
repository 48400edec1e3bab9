"""`AgentConfig`: every knob of one NB-Agent episode, loadable from TOML/YAML or keywords."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.configfile import read_config_file
from workbench.errors import ConfigError


class AgentConfig(BaseModel):
    """Budgets, sampling and sandbox settings for NB-Agent episodes."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(8, ge=1, description="Think-Code-Observe turns before the episode ends.")
    max_context_tokens: int = Field(4096, ge=64, description="Context window; older turns are trimmed to fit.")
    max_new_tokens: int = Field(512, ge=1, description="Cap on one turn's generation.")
    token_budget: int | None = Field(None, ge=1, description="Cap on generated tokens over the episode.")
    wall_clock_s: float = Field(300.0, gt=0, description="Wall-clock budget of one episode, seconds.")
    exec_timeout_s: float = Field(30.0, gt=0, description="Timeout of one code execution, seconds.")
    trim: Literal["hard", "soft", "none"] = Field(
        "hard", description="hard: keep only task + notepad; soft: drop oldest turns first; none: end instead.")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature; 0 = greedy.")
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=0)
    seed: int | None = Field(None, description="Sampling seed (per episode it is offset by the task index).")
    profile: str = Field("default", description="Sandbox profile name or path to a TOML profile.")
    isolation: Literal["bwrap", "none"] = Field("bwrap", description="'none' runs kernels unsandboxed (warns).")
    output_cap: int = Field(2000, ge=100, description="Characters of one observation shown to the model.")
    tool_call_budget: int = Field(50, ge=0, description="Tool calls allowed per episode.")
    tool_timeout_s: float = Field(30.0, gt=0, description="Timeout of one tool call, seconds.")
    search_top_k: int = Field(3, ge=1, description="Passages returned by the search tool.")
    show_notepad: bool = Field(True, description="Render the notepad into every observation.")
    task_variable: str | None = Field(
        "task", description="Notebook variable holding the task's question (None: the prompt only).")
    prompt: Literal["full", "compact"] = Field(
        "full", description="System prompt: full (rules, tool docs, notepad API) or compact (one line each, "
                            "for tiny models trained from scratch).")

    @classmethod
    def load(cls, path: str | Path, **overrides: object) -> "AgentConfig":
        """Read a TOML, YAML or JSON file (optionally under an [agent] table), then apply overrides."""
        return cls.from_dict({**read_config_file(path, what="agent config", table="agent"), **overrides})

    @classmethod
    def from_dict(cls, data: dict) -> "AgentConfig":
        from pydantic import ValidationError

        try:
            return cls(**data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid agent config: {problems}") from None
