"""An evolve experiment from one config file: what `workbench evolve CONFIG` runs (an `EvolveExperiment`;
a single episode's work item is an `EpisodeJob`, a different thing).

    # evolve.toml
    mode = "drzero"                        # drzero | agent0
    corpus = "runs/world/corpus.jsonl"     # the proposer's source documents; search is BM25 over them
    proposer = "scripted:proposer"         # a policy spec (scripted:proposer: the world proposer)
    solver = "scripted:world"              # transformers:MODEL trains it when [train] is given

    [evolve]                               # DrZeroConfig / Agent0Config fields
    run_dir = "runs/evolve"
    iterations = 1

    [train]                                # optional: TrainConfig fields of each update
    max_steps = 1

    result = run_experiment(EvolveExperiment.load("evolve.toml"))

A role whose policy is `transformers:MODEL` is loaded once and, with a `[train]` table, trained in
place (`trl_train_fn`); each update's weights go to `<run_dir>/iter_<i>/<role>/final`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from workbench.configfile import Config, check_fields, config_field, merge_nested, read_config_file
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.agent.executor import Executor
    from workbench.evolve.loop import EvolveResult
    from workbench.policies.base import Policy

MODES = ("drzero", "agent0")


@dataclass
class EvolveExperiment(Config):
    """What to evolve, on what; `evolve` and `train` hold the fields of those configs."""

    mode: str = config_field("drzero", "drzero (Dr. Zero) | agent0 (Agent0).")
    corpus: str = config_field("", "JSONL corpus: the proposer's documents, searched with BM25.")
    proposer: str = config_field(
        "scripted:proposer",
        "Proposer policy spec: scripted:proposer (the world proposer), transformers:MODEL, openai:URL.",
    )
    solver: str = config_field(
        "scripted:world", "Solver policy spec: scripted:world, transformers:MODEL (trained with [train]), openai:URL."
    )
    evolve: dict[str, Any] = config_field({}, "[evolve] table: DrZeroConfig / Agent0Config fields.")
    train: dict[str, Any] | None = config_field(
        None,
        "[train] table: TrainConfig fields of each update (see `workbench train --help-config`); "
        "without it nothing is trained.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode not in MODES:
            raise ConfigError(f"evolve experiment: mode {self.mode!r} is not one of {', '.join(MODES)}")
        if not self.corpus:
            raise ConfigError(
                "evolve experiment: set corpus = 'PATH/corpus.jsonl' (the proposer's documents); "
                "a saved world has one (workbench.worlds.make_world(...).save(dir))"
            )
        self.evolve_config()  # a bad [evolve] field gets its error now
        if self.train is not None:
            self.train_config()

    def evolve_config(self) -> Any:
        return self._evolve_class(self.mode).from_dict(dict(self.evolve))

    @staticmethod
    def _evolve_class(mode: str) -> Any:
        from workbench.evolve.config import Agent0Config, DrZeroConfig

        return DrZeroConfig if mode == "drzero" else Agent0Config

    def train_config(self) -> Any:
        from workbench.train.config import TrainConfig

        return TrainConfig.from_dict(dict(self.train or {}))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **overrides: Any) -> Self:
        """Top-level fields, `[evolve]` and `[train]` tables; overrides name a job field, `train.FIELD`
        or (anything else) an evolve field."""
        for table in ("evolve", "train"):
            if data.get(table) is not None and not isinstance(data[table], Mapping):
                raise ConfigError(f"EvolveExperiment.{table}: {data[table]!r} is not a table; give [{table}] fields")
        data = {**data, "evolve": dict(data.get("evolve") or {})}
        if data.get("train") is not None:
            data["train"] = dict(data["train"])
        jobs = {f.name for f in dataclasses.fields(cls)} - {"evolve", "train"}
        for key, value in overrides.items():
            if key in jobs:
                data[key] = value
            elif key.startswith("train."):
                data["train"] = merge_nested(data.get("train") or {}, _nested(key[len("train.") :], value))
            else:  # dotted names reach into a table (proposer_agent.max_steps), the mode's default if unset
                head = key.split(".")[0]
                if "." in key and head not in data["evolve"]:
                    data["evolve"][head] = cls._evolve_class(data.get("mode", "drzero"))().to_dict().get(head, {})
                data["evolve"] = merge_nested(data["evolve"], _nested(key, value))
        check_fields(
            "evolve experiment",
            data,
            {f.name for f in dataclasses.fields(cls)},
            "top-level fields are mode, corpus, proposer, solver; others go under [evolve] or [train]",
        )
        return cls._build(data, "EvolveExperiment")

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> Self:
        return cls.from_dict(read_config_file(path, what="evolve config"), **overrides)


def _nested(dotted: str, value: Any) -> dict[str, Any]:
    """{"a": {"b": value}} for "a.b"."""
    *parents, leaf = dotted.split(".")
    table: dict[str, Any] = {leaf: value}
    for part in reversed(parents):
        table = {part: table}
    return table


def _policy(spec: str) -> tuple[Policy, tuple[Any, Any] | None]:
    """(policy, (model, tokenizer) when it is a local transformers model that can be trained)."""
    from workbench.policies import register_scripted
    from workbench.resolve import resolve_policy
    from workbench.worlds.scripted.proposer import world_proposer

    register_scripted("proposer", world_proposer)
    if spec.startswith("transformers:"):
        from workbench.policies import TransformersPolicy
        from workbench.train.run import load_model

        model, tokenizer = load_model(spec.split(":", 1)[1])
        return TransformersPolicy.from_model(model, tokenizer, name=Path(spec.split(":", 1)[1]).name), (
            model,
            tokenizer,
        )
    return resolve_policy(spec), None


def run_experiment(job: EvolveExperiment, *, resume: bool = False, executor: Executor | None = None) -> EvolveResult:
    """Run the job to the end; returns the `EvolveResult`. `executor`: where the episodes run (it
    must have the tool sets "proposer" and "solver"); default: local kernels."""
    from workbench.evolve.loop import run_agent0, run_drzero
    from workbench.evolve.training import trl_train_fn

    config = job.evolve_config()
    proposer, p_model = _policy(job.proposer)
    solver, s_model = (proposer, p_model) if config.shared_model else _policy(job.solver)
    train_fn = None
    if job.train is not None:
        if p_model is None and s_model is None:
            raise ConfigError(
                "[train] is set but no role is a transformers:MODEL model; nothing can be trained "
                "(drop [train] to evolve without updates)"
            )
        train_fn = trl_train_fn(job.train_config(), proposer=p_model, solver=s_model)
    run = run_drzero if job.mode == "drzero" else run_agent0
    return run(
        config,
        proposer_policy=proposer,
        solver_policy=solver,
        corpus=job.corpus,
        train_fn=train_fn,
        resume=resume,
        executor=executor,
    )


__all__ = ["MODES", "EvolveExperiment", "run_experiment"]
