"""`AgentConfig`: every knob of one NB-Agent episode, loadable from TOML/YAML or keywords.

A model directory carries the agent settings it was trained with, so that it is run the way it
learned (a tiny model trained on the compact prompt and a 2048-token window fails on the full
prompt): `stamp_model(model, config)` puts `config.model_settings()` into the model's config, so
`save_pretrained` writes them into `config.json` under `"workbench_agent"` (SFT, training
checkpoints and the demo's final model do). Policies built from such a directory expose them as
`policy.agent_settings`; `with_model_settings(config, settings)` fills every field the caller did
not set explicitly from them.

    config, taken = with_model_settings(AgentConfig(max_steps=4), read_model_settings("runs/demo/final_model"))
    taken   # {"prompt": "compact", "max_context_tokens": 2048, ...}: max_steps=4 stays
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.configfile import Config
from workbench.errors import ConfigError
from workbench.policies.base import AGENT_SETTINGS_KEY, Policy


class AgentConfig(Config, BaseModel):
    """Budgets, sampling and sandbox settings for NB-Agent episodes (a pydantic model with the `Config`
    base's loading; strict: the text "8" for max_steps is an error, an int for a float is fine)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    config_table: ClassVar[str | None] = "agent"

    max_steps: int = Field(default=8, ge=1, description="Think-Code-Observe turns before the episode ends.")
    max_context_tokens: int = Field(default=4096, ge=64, description="Context window; older turns are trimmed to fit.")
    max_new_tokens: int = Field(default=512, ge=1, description="Cap on one turn's generation.")
    token_budget: int | None = Field(default=None, ge=1, description="Cap on generated tokens over the episode.")
    wall_clock_s: float = Field(default=300.0, gt=0, description="Wall-clock budget of one episode, seconds.")
    exec_timeout_s: float = Field(default=30.0, gt=0, description="Timeout of one code execution, seconds.")
    trim: Literal["hard", "soft", "none"] = Field(
        default="hard", description="hard: keep only task + notepad; soft: drop oldest turns first; none: end instead."
    )
    temperature: float | None = Field(
        default=None, ge=0, description="Sampling temperature; 0 = greedy; None = the model's default, else 1."
    )
    top_p: float | None = Field(
        default=None, gt=0, le=1, description="Nucleus sampling mass; None = the model's default, else 1."
    )
    top_k: int | None = Field(
        default=None, ge=0, description="Sample among the k likeliest tokens; 0 = no cap; None = the model's default."
    )
    seed: int | None = Field(default=None, description="Sampling seed (per episode it is offset by the task index).")
    profile: str = Field(default="default", description="Sandbox profile name or path to a TOML profile.")
    isolation: Literal["bwrap", "none"] = Field(default="bwrap", description="'none' runs kernels unsandboxed (warns).")
    kernel_start: Literal["auto", "zygote", "exec"] = Field(
        default="auto",
        description="How episode kernels start: forked from a zygote (fast), exec'd fresh (each its own address-space "
        "layout: workbench.kernel.zygote lists what a zygote fork does not give), or 'auto' (zygote where supported).",
    )
    output_cap: int = Field(default=2000, ge=100, description="Characters of one observation shown to the model.")
    tool_call_budget: int = Field(default=50, ge=0, description="Tool calls allowed per episode.")
    tool_timeout_s: float = Field(default=30.0, gt=0, description="Timeout of one tool call, seconds.")
    search_top_k: int = Field(default=3, ge=1, description="Passages returned by the search tool.")
    show_notepad: bool = Field(default=True, description="Render the notepad into every observation.")
    keep_notepads: bool = Field(
        default=False,
        description="Keep each observation's notepad block in the context (False: only the newest, at the tail). "
        "The context then only grows, so an untrimmed episode trains as one row instead of one per turn.",
    )
    task_variable: str | None = Field(
        default="task", description="Notebook variable holding the task's question (None: the prompt only)."
    )
    task_setup: str | None = Field(
        default=None,
        description="Code run (silently) in the kernel before the first turn, after the tools and the task "
        "variable: e.g. loading the task's data. The model does not see it; it may use the notepad.",
    )
    fork_groups: bool = Field(
        default=False,
        description="Run a GRPO group's task_setup once, in its first episode's kernel, and copy that kernel's "
        "state into the group's other episodes (see workbench.agent.groups): a group is the jobs of a batch "
        "with the same task, tools and sandbox; without a task_setup nothing changes. False: every episode runs it.",
    )
    prompt: Literal["full", "compact", "asearcher"] = Field(
        default="full",
        description="System prompt: full (rules, tool docs, notepad API), compact (one line each, "
        "for tiny models trained from scratch) or asearcher (search, read pages, keep notes; "
        "see workbench.agent.asearcher).",
    )
    short_text: int | None = Field(
        default=None,
        ge=20,
        description="ASearcher's short_text: after the next turn, the observation of a turn that "
        "called a page tool shrinks to its first N characters (None: keep it whole).",
    )
    framing: Literal["auto", "template", "continuation"] = Field(
        default="auto",
        description="How an observation joins the context: template (a user or tool message framed by the "
        "model's chat template), continuation (appended to the model's text, no framing) or auto (template, "
        "except for tokenizers without one and workbench's tiny models; see workbench.policies.chat_framing).",
    )
    page_tools: tuple[str, ...] = Field(
        default=("access",), strict=False, description="Tools whose observations short_text shrinks."
    )

    def explicit_dict(self) -> dict[str, Any]:
        """The fields set explicitly: a copy (`with_overrides`) keeps the rest unset, for a model's settings."""
        return self.model_dump(include=self.model_fields_set)

    def model_settings(self) -> dict[str, Any]:
        """The settings that shape what the model sees (`MODEL_SETTINGS`): what a model dir carries."""
        return {name: getattr(self, name) for name in MODEL_SETTINGS}


MODEL_SETTINGS = (
    "prompt",
    "max_context_tokens",
    "max_new_tokens",
    "max_steps",
    "trim",
    "output_cap",
    "show_notepad",
    "keep_notepads",
    "task_variable",
    "search_top_k",
    "short_text",
    "framing",
)
"""AgentConfig fields a model learns under (prompt, window, turn length, turns, observation form)."""

MODEL_KEY = AGENT_SETTINGS_KEY  # the key in a model's config.json that holds its agent settings


def stamp_model(model: Any, config: AgentConfig | dict[str, Any]) -> None:
    """Record the agent settings on a live model (`model.config`), so every `save_pretrained` of it
    (checkpoints included) writes them into `config.json`."""
    settings = config.model_settings() if isinstance(config, AgentConfig) else _checked(config, "stamp_model")
    setattr(model.config, MODEL_KEY, dict(settings))


def read_model_settings(source: Any) -> dict[str, Any]:
    """The agent settings a model carries, checked: `source` is a model dir, a loaded model or its
    config. {} when it carries none; keys this version does not know are skipped."""
    from workbench.policies.base import model_agent_settings

    raw = model_agent_settings(source)
    return _checked(raw, f"{MODEL_KEY} of {source}") if raw else {}


def policy_settings(policy: Policy) -> dict[str, Any]:
    """The checked agent settings a policy's model carries (`policy.agent_settings`), or {}."""
    raw = getattr(policy, "agent_settings", None)
    return _checked(raw, f"{MODEL_KEY} of {getattr(policy, 'name', policy)}") if raw else {}


def _checked(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: {MODEL_KEY!r} must be a table of agent settings, got {type(raw).__name__}")
    settings = {k: v for k, v in raw.items() if k in MODEL_SETTINGS}  # keys of other versions are skipped
    AgentConfig.from_dict(settings)  # a bad value gets an error naming the field
    return settings


def with_model_settings(config: AgentConfig | None, settings: dict[str, Any]) -> tuple[AgentConfig, dict[str, Any]]:
    """`config` with every field it did not set explicitly taken from a model's `settings`.

    Returns (config, the settings taken). Explicit values (keywords, a config file, CLI flags) win;
    a field left at its default takes the model's value."""
    config = config or AgentConfig()
    taken = {
        k: v
        for k, v in settings.items()
        if k in MODEL_SETTINGS and k not in config.model_fields_set and getattr(config, k) != v
    }
    if not taken:
        return config, {}
    merged = AgentConfig.from_dict({**config.model_dump(include=config.model_fields_set), **taken})
    return merged, taken


def describe_taken(settings: dict[str, Any], taken: dict[str, Any], source: str) -> str | None:
    """One line for a CLI: which agent settings came from the model (None when it carries none)."""
    if not settings:
        return None
    if not taken:
        return f"agent settings: the model's ({source}) are in effect already or set by flags/--config"
    items = ", ".join(f"{k}={v!r}" for k, v in taken.items())
    return f"agent settings from the model ({source}): {items} (flags and --config override them)"
