"""`train(config)`: build everything a config names and run it in this process.

    summary = train(TrainConfig.load("train.toml"))            # what `launch` runs in its child
    summary = train(cfg, tasks=my_tasks, episodes=my_runner)   # or hand in live objects

Pieces not handed in are built from the config: tasks from `tasks_path` (JSONL), the model and
tokenizer from `model_path` (a hub id, a local dir, a GGUF file or a `workbench models` name:
`workbench.models.resolve_model`), the episode runner from `harness` (your own agent through a model
gateway), `env`, or `episode_kind` (`search_r1` or `nbagent`) over the search `search_engine` names
(BM25 over `corpus_path`, or a ZeroSearch simulator written by `sim_policy` on the `sim_*` curriculum),
the store from `store_path`. The final weights go to `<output_dir>/final`. Under torchrun or `accelerate launch` each
rank runs this; only rank 0 writes (`workbench.train.processes`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, TrainingError
from workbench.train.config import TrainConfig
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.agent.config import AgentConfig
    from workbench.agent.executor import Executor
    from workbench.agent.local import ToolSet
    from workbench.contracts import EpisodeRunner
    from workbench.envs.episodes import EnvEpisodes
    from workbench.gateway import HarnessAgent, HarnessEpisodes
    from workbench.policies.base import Policy
    from workbench.search.hits import Retriever
    from workbench.search.simulated import SimulatedSearch
    from workbench.store import Store


def build_simulator(config: TrainConfig, policy: Policy | None = None) -> SimulatedSearch:
    """The ZeroSearch simulated search a config names (`search_engine="simulated"`)."""
    from workbench.search.simulated import SimulatedSearch

    if policy is None:
        if not config.sim_policy:
            raise ConfigError(
                "search_engine='simulated' needs sim_policy: the simulator LLM as a policy spec "
                "('transformers:MODEL' for a hub id, directory, GGUF or short name; 'openai:URL'; 'scripted:NAME')"
            )
        from workbench.resolve import resolve_policy

        policy = resolve_policy(config.sim_policy)
    return SimulatedSearch(
        policy,
        p_start=config.sim_p_start,
        p_end=config.sim_p_end,
        b=config.sim_b,
        total_steps=config.sim_total_steps or config.max_steps,
        seed=config.seed,
        top_k=config.top_k,
    )


def build_episodes(config: TrainConfig) -> EpisodeRunner[Policy]:
    """The episode runner a config names."""
    if config.harness:
        return harness_episodes(config)
    if config.env:
        return env_episodes(config, config.env)
    simulator = build_simulator(config) if config.search_engine == "simulated" else None
    if config.episode_kind == "search_r1":
        from workbench.train.episodes import SearchR1Episodes

        retriever: Retriever
        if simulator is not None:
            retriever = simulator
        else:
            if not config.corpus_path:
                raise ConfigError(
                    "episode_kind='search_r1' needs corpus_path (a JSONL corpus for the retriever) "
                    "or search_engine='simulated'"
                )
            from workbench.search.bm25 import BM25Retriever
            from workbench.search.corpus import Corpus

            retriever = BM25Retriever.build(Corpus.from_jsonl(config.corpus_path))
        return SearchR1Episodes(
            retriever,
            max_turns=config.max_turns,
            max_turn_tokens=config.max_turn_tokens,
            top_k=config.top_k,
            temperature=config.temperature,
            max_total_tokens=config.max_completion_length,
        )
    if config.executor == "ray":
        from workbench.cluster.select import make_executor, tool_set_spec

        executor = make_executor(
            "ray",
            tool_set_spec(config.tools or "search", corpus=config.corpus_path or None),
            concurrency=config.concurrency,
            ray_address=config.ray_address or None,
            workers=config.ray_workers,
        )
        return NBAgentEpisodes(config, executor=executor, owns_executor=True)
    return NBAgentEpisodes(config, simulator=simulator)


def env_episodes(config: TrainConfig, source: str, action_field: str | None = None) -> EnvEpisodes:
    """Episodes of the environment `source` (an env source spec) with the config's turn and sampling settings."""
    from workbench.envs.episodes import EnvEpisodes

    return EnvEpisodes(
        source,
        action_field=action_field,
        max_turns=config.max_turns,
        max_turn_tokens=config.max_turn_tokens,
        temperature=config.temperature,
        max_total_tokens=config.max_completion_length,
        concurrency=max(config.concurrency, 1),
        run_id=config.run_id,
    )


def harness_episodes(config: TrainConfig, agent: HarnessAgent | None = None) -> HarnessEpisodes:
    """Your own harness's episodes (`agent`, else the one `config.harness` names) through a model gateway that sets
    every call's sampling from the config (temperature, top_p 1, max_turn_tokens), whatever the harness asks."""
    from workbench.gateway import GatewayConfig, HarnessEpisodes, TrainingSampling, resolve_harness

    sampling = TrainingSampling(temperature=config.temperature, top_p=1.0, max_tokens=config.max_turn_tokens)
    return HarnessEpisodes(
        agent if agent is not None else resolve_harness(config.harness, where="TrainConfig.harness"),
        config=GatewayConfig(training=sampling),
        concurrency=max(config.concurrency, 1),
        run_id=config.run_id,
    )


class NBAgentEpisodes:
    """The `nbagent` kind: NB-Agent episodes in sandboxed kernels, sampled from the policy each call
    is given (the trainer passes its live one).

    The episodes run on an executor (`executor=`, else a `LocalExecutor` built here on first use,
    whose warm kernel pool lives across training steps until `aclose()`). They come back unscored
    and unwritten: the trainer scores each with its reward and writes it once. Tools: the tool set
    the config's `tools` names, else `search` over `corpus_path` (BM25) when it names one, plus
    `submit_final_answer`. `tools` may also be a function `task -> ToolRegistry`, called per episode; a
    `simulator` (ZeroSearch's
    `SimulatedSearch`) gives each episode a `search` bound to its task's question and gold answers,
    and is listed in `curricula` so the trainer advances its noise schedule. With `executor=`, the
    tools are the executor's: `toolset` names which of its tool sets the episodes get.
    """

    def __init__(
        self,
        config: TrainConfig | None = None,
        *,
        agent_config: AgentConfig | None = None,
        tools: ToolSet | None = None,
        concurrency: int | None = None,
        run_id: str | None = None,
        role: str = "solver",
        lineage: dict[str, Any] | None = None,
        simulator: SimulatedSearch | None = None,
        executor: Executor | None = None,
        toolset: str = "default",
        owns_executor: bool = False,
    ) -> None:
        from workbench.agent.config import AgentConfig

        if agent_config is None:
            if config is None:
                raise ConfigError("NBAgentEpisodes needs a TrainConfig or an AgentConfig")
            agent_config = AgentConfig(
                max_steps=config.max_turns,
                max_new_tokens=config.max_turn_tokens,
                temperature=config.temperature,
                profile=config.agent_profile,
                seed=config.seed,
            )
        if executor is not None and (tools is not None or simulator is not None):
            raise ConfigError(
                "NBAgentEpisodes: with executor=, the tools are the executor's; "
                "build it with them instead of passing tools= or simulator= here"
            )
        if simulator is not None and tools is None:
            from workbench.resolve import search_registry

            tools = lambda task: search_registry(simulator, task)  # noqa: E731
        elif tools is None and executor is None and config is not None and config.tools:
            from workbench.resolve import load_tool_set

            tools = load_tool_set(config.tools, corpus=config.corpus_path or None, tasks_path=config.tasks_path or None)
        elif tools is None and executor is None and config is not None and config.corpus_path:
            from workbench.resolve import load_search_tool

            tools = load_search_tool(corpus=config.corpus_path)
        self.simulator = simulator
        self.curricula = [simulator] if simulator is not None else []
        self.agent_config = agent_config
        self.tools = tools
        self.toolset = toolset
        self.concurrency = concurrency or (config.concurrency if config is not None else 4)
        self.run_id = run_id or (config.run_id if config is not None else "") or None
        self.role, self.lineage = role, dict(lineage or {})
        self._owns_executor = executor is None or owns_executor
        self.executor: Executor | None = executor

    def _executor(self) -> Executor:
        if self.executor is None:
            from workbench.agent.local import LocalExecutor

            self.executor = LocalExecutor(
                {self.toolset: self.tools} if self.tools is not None else None, concurrency=self.concurrency
            )
        return self.executor

    async def __call__(self, tasks: Sequence[Task], policy: Policy) -> list[Trajectory]:
        from workbench.agent.executor import config_for, gather_jobs, make_jobs

        jobs = make_jobs(
            tasks,
            config_for(policy, self.agent_config),
            role=self.role,
            tools=self.toolset,
            run_id=self.run_id or "",
            lineage=self.lineage,
        )
        return await gather_jobs(self._executor(), jobs, policy)

    async def aclose(self) -> None:
        if self.executor is not None and self._owns_executor:
            await self.executor.aclose()

    def close(self) -> None:
        """Stop the kernel pool (from sync code)."""
        from workbench.kernel.sync import run_sync

        run_sync(self.aclose())


def stamp_agent_settings(model: Any, episodes: EpisodeRunner[Policy]) -> None:
    """Record the agent settings NB-Agent episodes run with on the model, so its checkpoints and
    final dir carry them (`workbench.agent.config.stamp_model`); other episode kinds record none."""
    agent_config = getattr(episodes, "agent_config", None)
    if agent_config is None or not hasattr(model, "config"):
        return
    from workbench.agent.config import read_model_settings, stamp_model, with_model_settings

    effective, _ = with_model_settings(agent_config, read_model_settings(model))  # what NBAgent will run
    stamp_model(model, effective)


def load_model(spec: str) -> tuple[Any, Any]:
    """(model, tokenizer) to train: `spec` is a hub id (ORG/NAME[@REV]), a local dir, a GGUF file or a
    `workbench models` name. float32 weights on the CPU; the trainer moves them to its device and
    casts for mixed precision (`TrainConfig.device`, `bf16`)."""
    if not spec:
        raise ConfigError(
            "model_path is empty: give a hub id (ORG/NAME[@REV]), a local model directory (e.g. one "
            "workbench.models.build_tiny_model made), a GGUF file or a name from `workbench models list`"
        )
    from workbench.models.resolve import resolve_model

    try:
        source = resolve_model(spec)
    except ConfigError as exc:
        raise ConfigError(f"model_path: {exc}") from None
    from workbench.models.load import load_causal_lm

    model, tokenizer, _ = load_causal_lm(source, device=None, dtype="float32")
    return model, tokenizer


def train(
    config: TrainConfig,
    *,
    tasks: Sequence[Task] | None = None,
    episodes: EpisodeRunner[Policy] | None = None,
    model: Any = None,
    tokenizer: Any = None,
    reward: Any = None,
    store: Store | None = None,
    callbacks: list[Any] | None = None,
    policy: Policy | None = None,
) -> dict[str, Any]:
    """Run one training job to the end; returns a summary dict.

    Episodes sample from the live weights (or the trainer's vLLM engine, `use_vllm`); with `policy`,
    from that one instead, which the caller keeps in step with the weights after each optimizer step
    (a role's LoRA adapter served by vLLM, `workbench.policies.vllm_adapters`)."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from workbench.train.callbacks import MetricsCallback
    from workbench.train.trainer import WorkbenchGRPOTrainer

    if policy is not None and config.use_vllm:
        raise ConfigError("train(policy=...) samples from the given policy: set use_vllm=False (or drop policy)")
    config = config.replace(run_id=config.run_id or Path(config.output_dir).name)
    if "trackio" in config.report_to:  # read once, when trackio is first imported
        os.environ.setdefault("TRACKIO_DIR", str(Path(config.output_dir) / "trackio"))
    tasks = list(tasks if tasks is not None else _load_tasks(config))
    if model is None or tokenizer is None:
        model, tokenizer = load_model(config.model_path)
    store = store if store is not None else _default_store(config)
    owned = episodes is None  # episode runners built here are closed here (their kernel pools)
    episodes = episodes or build_episodes(config)
    stamp_agent_settings(model, episodes)
    cbs = [MetricsCallback(config.output_dir, store=store, run_id=config.run_id), *(callbacks or [])]
    trainer = WorkbenchGRPOTrainer(
        model,
        tokenizer,
        tasks,
        episodes=episodes,
        config=config,
        reward=reward,
        callbacks=cbs,
        store=store,
        policy_factory=None if policy is None else (lambda _trainer: policy),
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # metrics go to MetricsCallback (metrics.jsonl + store), not stdout
    try:
        result = _train_to_end(trainer, config)
    finally:
        if owned and hasattr(episodes, "close"):
            episodes.close()
    final = _save_final(trainer, model, tokenizer, Path(config.output_dir) / "final")
    return {
        "global_step": int(trainer.state.global_step),
        "training_loss": float(result.training_loss),
        "final_dir": str(final),
        "run_id": config.run_id,
    }


def _load_tasks(config: TrainConfig) -> list[Task]:
    """The config's tasks: questions, or (env=...) one row of reset arguments per episode."""
    if config.env:
        from workbench.envs.episodes import env_tasks

        return env_tasks(config.tasks_path)
    from workbench.resolve import load_tasks

    return list(load_tasks(config.tasks_path))


def _default_store(config: TrainConfig) -> Store | None:
    """The store at `config.store_path`, on rank 0 only (it writes every rank's episodes)."""
    from workbench.train.processes import is_main_process

    if not config.store_path or not is_main_process():
        return None
    from workbench.store import Store

    return Store(config.store_path)


def _train_to_end(trainer: Any, config: TrainConfig) -> Any:
    """`trainer.train()`, resumed as `config.resume_from` says; its TrainOutput."""
    resume = _resume_from(config)
    try:
        return trainer.train(resume_from_checkpoint=resume)
    except ValueError as exc:
        if resume is True and "checkpoint" in str(exc):
            raise TrainingError(f"resume_from='latest' found no checkpoint in {config.output_dir}") from exc
        raise


def _save_final(trainer: Any, model: Any, tokenizer: Any, final: Path) -> Path:
    """The trained model (or a LoRA run's adapter and its agent settings) and tokenizer, by rank 0 only."""
    trainer.save_model(str(final))  # by the main process only, as TRL saves checkpoints
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(final))
        from workbench.train.lora import save_adapter_settings

        save_adapter_settings(model, final)  # a LoRA run's final dir is an adapter: no config.json to hold them
    return final


def _resume_from(config: TrainConfig) -> bool | str | None:
    """Trainer.train's resume_from_checkpoint: True for 'latest', a checkpoint directory, or None."""
    if config.resume_from == "latest":
        return True
    if config.resume_from:
        if not Path(config.resume_from).is_dir():
            raise ConfigError(f"resume_from {config.resume_from!r} is not a checkpoint directory")
        return config.resume_from
    return None


__all__ = [
    "NBAgentEpisodes",
    "build_episodes",
    "build_simulator",
    "harness_episodes",
    "load_model",
    "stamp_agent_settings",
    "train",
]
