"""OpenEnv environments as workbench's episode source: the echo env and guess-the-number (tests/envs/openenv_games.py),
in this process and served by OpenEnv's own server over loopback, played token-exactly by workbench policies,
scored with their own rewards (`env`) and stored where the TrajectoryViewer reads them."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from env_training import one_step_train_config
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.types import Action
from openenv_games import (
    EchoAction,
    EchoEnvironment,
    EchoObservation,
    GuessAction,
    GuessEnvironment,
    GuessObservation,
    bisect_guesser,
    echo_player,
)

from workbench.envs.episodes import EnvEpisodes, env_tasks, reset_arguments
from workbench.envs.source import InProcessOpenEnv, load_env_source
from workbench.envs.text import choose_action_field, observation_text
from workbench.errors import ConfigError
from workbench.policies import ScriptedPolicy
from workbench.rewards import resolve_reward
from workbench.trajectory import Task, Trajectory

GUESS = "openenv:openenv_games:GuessEnvironment"
ECHO = "openenv:openenv_games:EchoEnvironment"


class Served:
    """An OpenEnv app (create_fastapi_app) under uvicorn on a free loopback port, in a thread."""

    def __init__(self, env: type, action: type, observation: type) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        app = create_fastapi_app(env, action, observation, max_concurrent_envs=8)
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the OpenEnv server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()


@pytest.fixture(scope="module")
def served_guess() -> Iterator[str]:
    with Served(GuessEnvironment, GuessAction, GuessObservation) as served:
        yield served.url


@pytest.fixture(scope="module")
def served_echo() -> Iterator[str]:
    with Served(EchoEnvironment, EchoAction, EchoObservation) as served:
        yield served.url


def play(spec: str, tasks: list[Task], policy: ScriptedPolicy, **kw: object) -> list[Trajectory]:
    return asyncio.run(EnvEpisodes(spec, **kw)(tasks, policy))  # type: ignore[arg-type]


def test_the_action_field_is_the_one_required_str_field_or_named() -> None:
    assert choose_action_field(EchoAction.model_json_schema()) == "message"
    assert choose_action_field(GuessAction.model_json_schema()) == "guess"  # `note` is optional
    with pytest.raises(ConfigError, match="also requires guess"):
        choose_action_field(GuessAction.model_json_schema(), "note")
    with pytest.raises(ConfigError, match="no str field by that name; its fields: guess"):
        choose_action_field(GuessAction.model_json_schema(), "answer")

    class Move(Action):
        piece: str
        square: str

    with pytest.raises(ConfigError, match=r"several str field\(s\).*action_field="):
        choose_action_field(Move.model_json_schema())
    with pytest.raises(ConfigError, match="also requires square"):
        choose_action_field(Move.model_json_schema(), "piece")


def test_observations_render_as_their_one_str_field_or_compact_json() -> None:
    assert observation_text({"prompt": "Higher than 8."}) == "Higher than 8."
    assert (
        observation_text({"echoed_message": "hi", "message_length": 2}) == '{"echoed_message":"hi","message_length":2}'
    )


def test_env_specs_name_their_fix() -> None:
    for bad, needle in [
        ("gym:CartPole", "openenv:package.module:ClassName"),
        ("openenv:no_such_module_here:Env", "cannot import no_such_module_here"),
        ("openenv:openenv_games:Nothing", "has no attribute 'Nothing'; name an Environment class or factory"),
        ("openenv:openenv_games:bisect_guesser", "annotate the factory's return type"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            load_env_source(bad)
    assert load_env_source(GUESS).action_schema()["required"] == ["guess"]


def test_tasks_are_seeds_or_jsonl_rows_of_reset_arguments(tmp_path: Path) -> None:
    assert [reset_arguments(t) for t in env_tasks(2)] == [{"seed": 0}, {"seed": 1}]
    path = tmp_path / "resets.jsonl"
    path.write_text('{"id": "a", "secret": 3}\n\n{"secret": 11, "seed": 5}\n')
    tasks = env_tasks(path)
    assert [(t.id, reset_arguments(t)) for t in tasks] == [
        ("a", {"secret": 3}),
        ("resets-1", {"secret": 11, "seed": 5}),
    ]
    path.write_text("[1, 2]\n")
    with pytest.raises(ConfigError, match=r"resets\.jsonl:1: a JSON object"):
        env_tasks(path)
    with pytest.raises(ConfigError, match="no reset arguments"):
        reset_arguments(Task(id="q", question="?"))


def test_guess_the_number_in_process_token_exact_and_scored_by_the_env() -> None:
    policy = ScriptedPolicy(bisect_guesser)
    trajs = play(GUESS, env_tasks(4), policy, max_turns=6, max_turn_tokens=8)
    assert [t.termination for t in trajs] == ["submitted"] * 4
    spec = resolve_reward("env")
    for traj in trajs:
        assert traj.metadata["env"] == GUESS and traj.metadata["env_action_field"] == "guess"
        assert traj.metadata["env_opening"].startswith("Guess a number from 1 to 16")
        assert traj.steps[-1].observation["text"].startswith("Correct:")
        assert traj.final_answer == traj.steps[-1].observation["text"].split()[-1].rstrip(".")
        assert spec.score(traj) == {"env": 1.0, "total": 1.0}
        assert spec.score_steps(traj) == [0.0] * (len(traj.steps) - 1) + [1.0]
        # token-exact: the prompt, then each turn's sampled ids (mask 1) and observation ids (mask 0)
        (segment,) = traj.segments()
        assert segment["prompt_ids"] == policy.codec.chat([{"role": "user", "content": traj.metadata["env_opening"]}])
        expected = [(i, 1) for s in traj.steps for i in s.completion_ids]
        assert [m for m in segment["env_mask"] if m == 1] == [1] * len(expected)
        text = policy.codec.decode(segment["prompt_ids"] + segment["completion_ids"])
        assert all(f"\n{s.observation['text']}\n" in text for s in traj.steps[:-1])
    secrets = [GuessEnvironment() for _ in range(4)]
    for seed, env in enumerate(secrets):
        env.reset(seed=seed)
    assert [t.final_answer for t in trajs] == [str(env.secret) for env in secrets]


def test_served_gives_the_same_episodes_as_in_process(served_guess: str) -> None:
    tasks = env_tasks(3)
    local = play(GUESS, tasks, ScriptedPolicy(bisect_guesser), max_turns=6, max_turn_tokens=8)
    remote = play(f"openenv+{served_guess}", tasks, ScriptedPolicy(bisect_guesser), max_turns=6, max_turn_tokens=8)
    assert [t.metadata["env"] for t in remote] == [f"openenv+{served_guess}"] * 3
    for a, b in zip(local, remote, strict=True):
        assert a.segments() == b.segments() and a.termination == b.termination == "submitted"
        assert [s.observation["env_reward"] for s in a.steps] == [s.observation["env_reward"] for s in b.steps]


def test_echo_runs_to_max_turns_in_process_and_served(served_echo: str) -> None:
    for spec in (ECHO, f"openenv+{served_echo}"):
        (traj,) = play(spec, env_tasks(1), ScriptedPolicy(echo_player), max_turns=3, max_turn_tokens=8)
        assert traj.termination == "max_steps" and len(traj.steps) == 3
        assert traj.steps[0].observation["fields"] == {"echoed_message": "hi", "message_length": 2}
        assert traj.steps[0].observation["text"] == '{"echoed_message":"hi","message_length":2}'
        assert resolve_reward("env").score(traj)["total"] == pytest.approx(0.6)


def test_a_served_env_that_is_not_there_is_named() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConfigError, match="no OpenEnv server answers"):
        _ = EnvEpisodes(f"openenv+http://127.0.0.1:{port}").action_field


def test_a_failing_step_ends_that_episode_with_an_error() -> None:
    class Fragile(GuessEnvironment):
        def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: object) -> GuessObservation:
            raise RuntimeError("the game crashed")

    source = InProcessOpenEnv(Fragile, name="fragile")
    (traj,) = asyncio.run(EnvEpisodes(source)(env_tasks(1), ScriptedPolicy(bisect_guesser)))
    assert traj.termination == "error" and "the game crashed" in (traj.error or "")
    with pytest.raises(ConfigError, match="did not come from an environment"):
        resolve_reward("env").score(Trajectory(task=Task(id="x", question="?")))


def test_workbench_run_env_stores_what_the_viewer_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main
    from workbench.store import Store
    from workbench.widgets import TrajectoryViewer

    out = tmp_path / "run"
    argv = ["run", "--env", GUESS, "--episodes", "3", "--policy", "scripted:guesser", "--plugin", "openenv_games"]
    assert main([*argv, "--max-steps", "6", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the model's text goes to 'guess'" in printed and "100% ended by the environment" in printed
    with Store(out) as store:
        stored = list(store.iter_trajectories())
    assert len(stored) == 3 and {t.rewards["env"] for t in stored} == {1.0}
    assert all(t.steps[-1].reward == 1.0 for t in stored)  # the per-turn form, for any estimator
    viewer = TrajectoryViewer(str(out))
    viewer.select(stored[0].id)
    detail = viewer.detail
    assert detail["id"] == stored[0].id and detail["rewards"] == {"env": 1.0, "total": 1.0}
    last = detail["steps"][-1]
    assert last["outputs"][0]["text"].startswith("Correct:") and last["reward"] == 1.0


def test_workbench_eval_env_reports_pass_at_k(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    resets = tmp_path / "resets.jsonl"
    resets.write_text("".join(json.dumps({"id": f"s{n}", "secret": n}) + "\n" for n in (3, 9)))
    argv = ["eval", "--env", GUESS, "--dataset", str(resets), "-k", "2", "--policy", "scripted:guesser"]
    assert main([*argv, "--plugin", "openenv_games", "--out", str(tmp_path / "ev")]) == 0
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert (report["episodes"], report["mean_reward"], report["pass@2"], report["done_rate"]) == (4, 1.0, 1.0, 1.0)
    assert main(["eval", "--env", GUESS, "--policy", "scripted:guesser"]) == 1
    assert "--episodes N" in capsys.readouterr().err


@pytest.mark.slow
def test_workbench_train_env_runs_a_grpo_step_on_a_tiny_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main
    from workbench.store import Store

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = ["Guess a number from 1 to 16.", "Higher than 8.", "Lower than 12.", "Correct: 10."] * 10
    config = one_step_train_config(tmp_path, texts)
    argv = ["train", str(config), "--env", GUESS, "--episodes", "2"]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "reward: env" in printed and "'global_step': 1" in printed
    with Store(tmp_path / "store") as store:
        stored = list(store.iter_trajectories())
    assert len(stored) == 4 and all(t.metadata["env"] == GUESS and "env" in t.rewards for t in stored)
    for traj in stored:
        (segment,) = traj.segments()
        sampled = sum(len(s.completion_ids) for s in traj.steps)
        assert sum(segment["env_mask"]) == sampled and 0 < sampled <= 16


def test_an_in_process_rubric_scores_each_step_as_components() -> None:
    from workbench.rewards import RewardSpec

    (traj,) = play("openenv:openenv_games:RubricGuessEnvironment", env_tasks(1), ScriptedPolicy(bisect_guesser))
    assert traj.termination == "submitted" and len(traj.steps) > 1
    assert traj.steps[-1].observation["rubric"] == {"": 1.0, "format": 1.0}
    spec = RewardSpec(
        name="rubric",
        components=[
            {"name": "env.rubric", "params": {"name": "format"}, "weight": 0.5},
            {"name": "env", "weight": 1.0},
        ],
    )
    n = len(traj.steps)
    scored = spec.score(traj)
    assert scored["env"] == pytest.approx(0.1 * (n - 1) + 1.0) and scored["env.rubric"] == pytest.approx(n)
    assert resolve_reward("env.rubric").score_steps(traj) == pytest.approx([0.1] * (n - 1) + [1.0])
