"""The NB-Agent: prompts, tolerant parsing, the context watcher, the episode loop, the executor seam
(environment, jobs, executors, recorder) and the notebook front."""

from workbench.agent.config import AgentConfig
from workbench.agent.environment import Environment, EpisodeEnv, LocalEnvironment, StepResult, ToolPrompt
from workbench.agent.episode import run_episode
from workbench.agent.executor import EpisodeJob, Executor, make_jobs, run_jobs
from workbench.agent.local import LocalExecutor
from workbench.agent.parsing import ParsedTurn, parse_turn
from workbench.agent.recorder import Recorder, Scorer, TrajectoryStore
from workbench.agent.runner import NBAgent, run_sync

__all__ = [
    "AgentConfig",
    "Environment",
    "EpisodeEnv",
    "EpisodeJob",
    "Executor",
    "LocalEnvironment",
    "LocalExecutor",
    "NBAgent",
    "ParsedTurn",
    "Recorder",
    "Scorer",
    "StepResult",
    "ToolPrompt",
    "TrajectoryStore",
    "make_jobs",
    "parse_turn",
    "run_episode",
    "run_jobs",
    "run_sync",
]
