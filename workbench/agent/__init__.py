"""The NB-Agent: prompts, tolerant parsing, the context watcher, the episode loop and the runner."""

from workbench.agent.config import AgentConfig
from workbench.agent.episode import EpisodeEnv, run_episode
from workbench.agent.parsing import ParsedTurn, parse_turn
from workbench.agent.runner import NBAgent, run_sync

__all__ = ["AgentConfig", "EpisodeEnv", "NBAgent", "ParsedTurn", "parse_turn", "run_episode", "run_sync"]
