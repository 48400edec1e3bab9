"""Choosing Ray from a config or the command line builds the right executor (no cluster starts)."""

from __future__ import annotations

import argparse

import pytest

from workbench.cli.executors import add_executor_arguments, executor_from_args
from workbench.errors import ConfigError


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--concurrency", type=int, default=3)
    add_executor_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.slow
def test_train_config_with_executor_ray_gives_nbagent_episodes_on_ray_workers(tmp_path, monkeypatch):
    from workbench.cluster import RayExecutor, ToolsSpec
    from workbench.train.config import TrainConfig
    from workbench.train.run import NBAgentEpisodes, build_episodes

    monkeypatch.chdir(tmp_path)
    config = TrainConfig(
        episode_kind="nbagent", executor="ray", ray_workers=3, concurrency=2, corpus_path="corpus.jsonl"
    )
    episodes = build_episodes(config)
    assert isinstance(episodes, NBAgentEpisodes) and isinstance(episodes.executor, RayExecutor)
    assert episodes.executor._placement == {"workers": 3, "kernels_per_worker": 2, "address": None}
    [spec] = episodes.executor._tools.values()
    assert isinstance(spec, ToolsSpec) and spec.kwargs["corpus"] == str(tmp_path / "corpus.jsonl")
    assert episodes.executor._workers is None  # workers start with the first batch
    with pytest.raises(ConfigError, match="bm25"):
        TrainConfig(episode_kind="nbagent", executor="ray", search_engine="simulated")
    with pytest.raises(ConfigError, match="'local' or 'ray'"):
        TrainConfig(executor="dask")


def test_cli_flags_pick_the_executor():
    from workbench.cluster import RayExecutor

    assert executor_from_args(parse(), worker_tools=None) is None
    ex = executor_from_args(
        parse("--executor", "ray", "--ray-address", "auto", "--ray-workers", "2"), worker_tools=None
    )
    assert isinstance(ex, RayExecutor) and ex.mode == "env"
    assert ex._placement == {"workers": 2, "kernels_per_worker": 3, "address": "auto"}
    ep = executor_from_args(
        parse("--executor", "ray", "--ray-mode", "episode"), worker_tools=None, policy="openai:http://gpu:8000/v1"
    )
    assert ep.mode == "episode" and ep.worker_policy == "openai:http://gpu:8000/v1"
    with pytest.raises(ConfigError, match="--executor ray"):
        executor_from_args(parse("--ray-address", "auto"), worker_tools=None)
    with pytest.raises(ConfigError, match="policy"):
        executor_from_args(parse("--executor", "ray", "--ray-mode", "episode"), worker_tools=None)


@pytest.mark.slow
def test_evolve_and_eval_recipes_build_what_the_workers_need(tmp_path):

    from workbench.cli.evolve import _executor
    from workbench.cli.recipes import eval_tools, evolve_tools
    from workbench.cluster import RayExecutor
    from workbench.worlds import make_world

    world = make_world(seed=0, size="small").save(tmp_path / "world")
    corpus = world / "corpus.jsonl"
    assert set(evolve_tools("solver", str(corpus)).names) >= {"search", "submit_final_answer"}
    assert "search" in evolve_tools("proposer", str(corpus)).names
    with pytest.raises(ConfigError, match="proposer"):
        evolve_tools("critic", str(corpus))
    assert "search" in eval_tools(None, str(world / "qa_test.jsonl")).names  # the corpus beside the dataset

    Job = type("Job", (), {"corpus": str(corpus)})  # what _executor reads of an EvolveExperiment and its config
    Config = type("Config", (), {"concurrency": 2})

    args = parse("--executor", "ray", "--ray-address", "auto")
    ex = _executor(args, Job(), Config())
    assert isinstance(ex, RayExecutor) and ex.toolsets == ("proposer", "solver")
    assert ex._tools["solver"].kwargs == {"role": "solver", "corpus": str(corpus)}
    with pytest.raises(ConfigError, match="--ray-mode env"):
        _executor(parse("--executor", "ray", "--ray-mode", "episode"), Job(), Config())
