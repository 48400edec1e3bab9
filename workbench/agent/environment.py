"""The old home of `workbench.agent.episode_sandbox` (deprecated names, kept one release).

`Environment` is now `EpisodeSandbox` and `LocalEnvironment` / `EpisodeEnv` are `LocalEpisodeSandbox`:
"environment" names an RL environment from another standard (docs/glossary.md).
"""

from workbench._lazy import moved_names

_HOME = "workbench.agent.episode_sandbox"
__getattr__ = moved_names(
    __name__,
    {
        "Environment": f"{_HOME}:EpisodeSandbox",
        "LocalEnvironment": f"{_HOME}:LocalEpisodeSandbox",
        "EpisodeEnv": f"{_HOME}:LocalEpisodeSandbox",
        **{name: f"{_HOME}:{name}" for name in ("CodeKernel", "StepResult", "ToolPrompt")},
    },
)
