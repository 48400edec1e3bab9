"""The NB-Agent: prompts, tolerant parsing, the context watcher, the episode loop, the executor seam
(environment, jobs, executors, recorder) and the notebook front."""

from workbench.agent.config import AgentConfig
from workbench.agent.environment import Environment, StepResult
from workbench.agent.executor import EpisodeJob, Executor, make_jobs, run_jobs
from workbench.agent.local import LocalExecutor
from workbench.agent.recorder import Recorder
from workbench.agent.runner import NBAgent

__all__ = [
    "AgentConfig",
    "Environment",
    "EpisodeJob",
    "Executor",
    "LocalExecutor",
    "NBAgent",
    "Recorder",
    "StepResult",
    "make_jobs",
    "run_jobs",
]
