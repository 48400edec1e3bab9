"""The old home of `workbench.agent.episode_sandbox` (deprecated names, kept one release).

`Environment` is now `EpisodeSandbox` and `LocalEnvironment` / `EpisodeEnv` are `LocalEpisodeSandbox`:
"environment" names an RL environment from another standard (docs/glossary.md).
"""

from __future__ import annotations

import warnings
from typing import Any

from workbench.agent import episode_sandbox

_RENAMED = {
    "Environment": "EpisodeSandbox",
    "LocalEnvironment": "LocalEpisodeSandbox",
    "EpisodeEnv": "LocalEpisodeSandbox",
}
_SAME = ("CodeKernel", "StepResult", "ToolPrompt")


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name, name if name in _SAME else None)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"workbench.agent.environment.{name} is now workbench.agent.episode_sandbox.{new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(episode_sandbox, new)
