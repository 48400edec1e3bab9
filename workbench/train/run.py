"""`train(config)`: build everything a config names and run it in this process.

    summary = train(TrainConfig.load("train.toml"))            # what `launch` runs in its child
    summary = train(cfg, tasks=my_tasks, episodes=my_runner)   # or hand in live objects

Pieces not handed in are built from the config: tasks from `tasks_path` (JSONL), the model and
tokenizer from `model_path` (local, offline), the episode runner from `episode_kind`
(`search_r1` over a BM25 index of `corpus_path`, or `nbagent`), the store from `store_path`.
The final weights go to `<output_dir>/final`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from workbench.errors import ConfigError, TrainingError
from workbench.train.config import TrainConfig
from workbench.trajectory import Task


def load_tasks(path: str | Path) -> list[Task]:
    path = Path(path)
    if not str(path) or not path.is_file():
        raise ConfigError(f"tasks_path {str(path)!r} is not a file; point it at a JSONL of tasks")
    tasks = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                tasks.append(Task.from_dict(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n}: not valid JSON ({exc})") from exc
    if not tasks:
        raise ConfigError(f"{path} holds no tasks")
    return tasks


def build_episodes(config: TrainConfig) -> Any:
    """The episode runner a config names."""
    if config.episode_kind == "search_r1":
        from workbench.train.episodes import SearchR1Episodes

        if not config.corpus_path:
            raise ConfigError("episode_kind='search_r1' needs corpus_path (a JSONL corpus for the retriever)")
        from workbench.search.bm25 import BM25Retriever
        from workbench.search.corpus import Corpus

        retriever = BM25Retriever.build(Corpus.from_jsonl(config.corpus_path))
        return SearchR1Episodes(retriever, max_turns=config.max_turns, max_turn_tokens=config.max_turn_tokens,
                                top_k=config.top_k, temperature=config.temperature,
                                max_total_tokens=config.max_completion_length)
    return NBAgentEpisodes(config)


class NBAgentEpisodes:
    """The `nbagent` kind: NB-Agent episodes (sandboxed kernels) with the trainer's live policy."""

    def __init__(self, config: TrainConfig) -> None:
        from workbench.agent.config import AgentConfig

        self.config = config
        self.agent_config = AgentConfig(max_steps=config.max_turns, max_new_tokens=config.max_turn_tokens,
                                        temperature=config.temperature, profile=config.agent_profile,
                                        search_top_k=config.top_k, seed=config.seed)

    async def __call__(self, tasks: list[Task], policy: Any) -> list[Any]:
        from workbench.agent.runner import NBAgent

        agent = NBAgent(policy, config=self.agent_config, concurrency=self.config.concurrency,
                        run_id=self.config.run_id or None)
        try:
            return await agent.arun(tasks, progress=False)
        finally:
            await agent.aclose()


def load_model(path: str) -> tuple[Any, Any]:
    if not path or not Path(path).is_dir():
        raise ConfigError(f"model_path {path!r} is not a local model directory; build one with "
                          "workbench.models.build_tiny_model or point at a saved checkpoint")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def train(config: TrainConfig, *, tasks: Sequence[Task] | None = None, episodes: Any = None, model: Any = None,
          tokenizer: Any = None, reward: Any = None, store: Any = None, callbacks: list | None = None) -> dict:
    """Run one training job to the end; returns a summary dict."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from workbench.train.callbacks import MetricsCallback
    from workbench.train.trainer import WorkbenchGRPOTrainer

    config = config.replace(run_id=config.run_id or Path(config.output_dir).name)
    tasks = list(tasks) if tasks is not None else load_tasks(config.tasks_path)
    if model is None or tokenizer is None:
        model, tokenizer = load_model(config.model_path)
    if store is None and config.store_path:
        from workbench.store import Store

        store = Store(config.store_path)
    episodes = episodes or build_episodes(config)
    cbs = [MetricsCallback(config.output_dir, store=store, run_id=config.run_id), *(callbacks or [])]
    trainer = WorkbenchGRPOTrainer(model, tokenizer, tasks, episodes=episodes, config=config, reward=reward,
                                   callbacks=cbs, store=store)
    resume: Any = None
    if config.resume_from == "latest":
        resume = True
    elif config.resume_from:
        if not Path(config.resume_from).is_dir():
            raise ConfigError(f"resume_from {config.resume_from!r} is not a checkpoint directory")
        resume = config.resume_from
    try:
        result = trainer.train(resume_from_checkpoint=resume)
    except ValueError as exc:
        if resume is True and "checkpoint" in str(exc):
            raise TrainingError(f"resume_from='latest' found no checkpoint in {config.output_dir}") from exc
        raise
    final = Path(config.output_dir) / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    return {"global_step": int(trainer.state.global_step), "training_loss": float(result.training_loss),
            "final_dir": str(final), "run_id": config.run_id}


__all__ = ["NBAgentEpisodes", "build_episodes", "load_model", "load_tasks", "train"]
