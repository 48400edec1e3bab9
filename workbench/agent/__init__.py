"""The NB-Agent: prompts, tolerant parsing, the context watcher, the episode loop, the executor seam
(episode sandbox, jobs, executors, recorder) and the notebook front."""

from workbench.agent.config import AgentConfig
from workbench.agent.episode_sandbox import EpisodeSandbox, StepResult
from workbench.agent.executor import EpisodeJob, Executor, make_jobs, run_jobs
from workbench.agent.local import LocalExecutor
from workbench.agent.recorder import Recorder
from workbench.agent.runner import NBAgent

__all__ = [
    "AgentConfig",
    "EpisodeJob",
    "EpisodeSandbox",
    "Executor",
    "LocalExecutor",
    "NBAgent",
    "Recorder",
    "StepResult",
    "make_jobs",
    "run_jobs",
]
