"""A verifiers environment as workbench's episode source: tests/envs/vf_arith.py (a `vf.MultiTurnEnv` with a
two-function `vf.Rubric`) loaded by name in the verifiers sidecar (`.venv-verifiers`, made by `make setup`),
played token-exactly by workbench policies, its rubric's scores kept as reward components, stored, run from
the CLI and trained on with GRPO. WORKBENCH_VERIFIERS_OPTIONAL=1 skips them where the sidecar is absent."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from env_training import one_step_train_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verifiers_players import adder, chatty

from workbench.envs.bridge_process import BridgeError
from workbench.envs.episodes import EnvEpisodes, env_tasks
from workbench.envs.protocols import EnvReply
from workbench.envs.source import load_env_source
from workbench.envs.verifiers_bridge import decode_line, encode_line, surrogate_free
from workbench.envs.verifiers_source import (
    SIDECAR_PYTHON_VAR,
    VerifiersEnv,
    VerifiersEpisode,
    parse_verifiers_spec,
    sidecar_python,
)
from workbench.errors import ConfigError
from workbench.policies import ScriptedPolicy
from workbench.rewards import RewardSpec, resolve_reward
from workbench.safetext import safe_text
from workbench.trajectory import Task, Trajectory

HERE = Path(__file__).resolve().parent
ARITH = "verifiers:vf-arith?scale=2"  # rubric: correct (weight 1) + brief (weight 0.5 * 2)


@pytest.fixture(scope="module", autouse=True)
def sidecar() -> Iterator[None]:
    """The sidecar must be there (CI has it after `make setup`); tests/envs on its import path."""
    try:
        sidecar_python()
    except ConfigError as exc:
        if os.environ.get("WORKBENCH_VERIFIERS_OPTIONAL") == "1":
            pytest.skip(f"WORKBENCH_VERIFIERS_OPTIONAL=1 and {exc}")
        raise
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(HERE))
        yield


@pytest.fixture(scope="module")
def arith() -> Iterator[VerifiersEnv]:
    source = VerifiersEnv.from_spec(ARITH)
    yield source
    source.close()


def play(source: VerifiersEnv, tasks: list[Task], fn: object) -> list[Trajectory]:
    policy = ScriptedPolicy(fn)  # type: ignore[arg-type]
    return asyncio.run(EnvEpisodes(source, max_turns=4, max_turn_tokens=12)(tasks, policy))


@given(st.dictionaries(st.text(max_size=8), st.text() | st.integers() | st.none(), max_size=4), st.text())
def test_bridge_lines_carry_any_text_as_one_ascii_line(fields: dict[str, object], text: str) -> None:
    message = {**fields, "id": 7, "text": text}
    line = encode_line(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and line.isascii()
    assert decode_line(line) == message  # lone surrogates included
    assert surrogate_free(text) == safe_text(text)  # the bridge keeps workbench's one rule for broken text


@given(st.binary())
def test_bridge_lines_that_are_not_utf8_or_json_fail_cleanly(raw: bytes) -> None:
    line = b'{"text": "' + raw.replace(b'"', b"").replace(b"\\", b"") + b'"}'
    try:
        found = decode_line(line)
    except ValueError:
        return  # a control character or such: an error, which the bridge answers with
    assert isinstance(found["text"], str)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(), st.binary(max_size=16))
def test_any_turn_text_crosses_the_bridge_and_is_scored(arith: VerifiersEnv, text: str, raw: bytes) -> None:
    async def episode() -> tuple[EnvReply, EnvReply]:
        session = await arith.open()
        try:
            await session.reset(seed=0)
            middle = await session.step({"content": text})
            return middle, await session.step({"content": raw.decode("utf-8", "surrogateescape") + "\n}{\n"})
        finally:
            await session.close()

    middle, last = asyncio.run(episode())
    assert middle.messages == [{"role": "user", "content": "Now add 3."}] and not middle.done
    assert last.done and last.rubric["correct"] == 0.0 and set(last.rubric) == {"", "correct", "brief", "num_turns"}


def test_specs_arguments_and_missing_parts_name_their_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_verifiers_spec("verifiers:vf-arith?scale=2&hard=true&tag=x y") == (
        "vf-arith",
        {"scale": 2, "hard": True, "tag": "x y"},
    )
    assert parse_verifiers_spec("verifiers:owner/env") == ("owner/env", {})
    with pytest.raises(ConfigError, match=r"verifiers:NAME\?key=value"):
        parse_verifiers_spec("verifiers:")
    with pytest.raises(ConfigError, match=r"\?key=value&key=value"):
        parse_verifiers_spec("verifiers:vf-arith?scale")
    with pytest.raises(ConfigError, match=r"put the module no_such_env .* on PYTHONPATH"):
        load_env_source("verifiers:no-such-env").action_schema()
    monkeypatch.setenv(SIDECAR_PYTHON_VAR, "/nonexistent/python")
    with pytest.raises(ConfigError, match=r"`make setup` .* creates \.venv-verifiers"):
        load_env_source(ARITH).action_schema()


def test_the_sidecar_holds_the_verifiers_that_setup_pins(arith: VerifiersEnv) -> None:
    setup = (HERE.parents[1] / "scripts" / "setup.sh").read_text()
    assert "verifiers_pins=(verifiers==0.3.1)" in setup
    assert arith.bridge().hello == {"env": "TwoStepArith", "verifiers": "0.3.1", "examples": 3}


def test_a_multiturn_env_plays_token_exact_and_its_rubric_scores_are_components(arith: VerifiersEnv) -> None:
    policy = ScriptedPolicy(adder)
    trajs = asyncio.run(EnvEpisodes(arith, max_turns=4, max_turn_tokens=12)(env_tasks(3), policy))
    assert [t.termination for t in trajs] == ["submitted"] * 3  # the environment's own stop condition
    assert [t.final_answer for t in trajs] == ["6", "15", "24"]
    for traj, (a, b, c) in zip(trajs, [(1, 2, 3), (4, 5, 6), (7, 8, 9)], strict=True):
        prompt = [
            {"role": "system", "content": "Answer with a number."},
            {"role": "user", "content": f"What is {a} + {b}?"},
        ]
        assert traj.metadata["env"] == ARITH and traj.metadata["env_prompt"] == prompt
        first, last = traj.steps
        assert first.observation["messages"] == [{"role": "user", "content": f"Now add {c}."}]
        assert (first.observation["env_reward"], first.observation.get("rubric")) == (None, None)
        assert last.observation["rubric"] == {"": 2.0, "correct": 1.0, "brief": 1.0, "num_turns": 2.0}
        assert last.observation["metadata"]["stop_condition"] == "answered_twice"
        (segment,) = traj.segments()
        assert segment["prompt_ids"] == policy.codec.chat(prompt)
        assert sum(segment["env_mask"]) == sum(len(s.completion_ids) for s in traj.steps)
        assert f"Now add {c}." in policy.codec.decode(segment["completion_ids"])
    spec = RewardSpec(
        name="parts",
        components=[
            {"name": "env.rubric", "params": {"name": "correct"}, "weight": 1.0, "key": "correct"},
            {"name": "env.rubric", "params": {"name": "brief"}, "weight": 0.25, "key": "brief"},
        ],
    )
    assert spec.score(trajs[0])["total"] == pytest.approx(1.25)
    assert resolve_reward("env").score_steps(trajs[0]) == [0.0, 2.0]  # the weighted total, on the last turn


def test_a_wrong_chatty_player_scores_zero_and_odd_text_crosses(arith: VerifiersEnv) -> None:
    (traj,) = play(arith, env_tasks(1), chatty)
    assert traj.termination == "submitted" and traj.steps[-1].observation["rubric"]["correct"] == 0.0
    assert resolve_reward("env").score(traj)["env"] == 0.0


def test_tasks_can_name_their_own_question(arith: VerifiersEnv, tmp_path: Path) -> None:
    rows = tmp_path / "sums.jsonl"
    rows.write_text(json.dumps({"id": "q", "question": "What is 20 + 22?", "info": {"then": 8, "total": 50}}) + "\n")
    (traj,) = play(arith, env_tasks(rows), adder)
    assert traj.task.id == "q" and traj.final_answer == "50"
    assert traj.steps[-1].observation["rubric"]["correct"] == 1.0
    (bad,) = play(arith, [Task(id="b", question="?", metadata={"reset": {"seed": "x"}})], adder)
    assert bad.termination == "error" and "reset(seed='x', split='train'): the seed is an int" in (bad.error or "")


def test_an_episode_workbench_stops_first_is_unscored_and_the_bridge_plays_on(arith: VerifiersEnv) -> None:
    policy = ScriptedPolicy(adder)
    (cut,) = asyncio.run(EnvEpisodes(arith, max_turns=1, max_turn_tokens=12)(env_tasks(1), policy))
    assert cut.termination == "max_steps" and "rubric" not in cut.steps[-1].observation
    assert resolve_reward("env").score(cut)["env"] == 0.0
    process = arith.bridge().process
    (whole,) = play(arith, env_tasks(1), adder)  # the cut session was closed (its rollout cancelled)
    assert whole.termination == "submitted" and arith.bridge().process is process  # one bridge, many sessions


def test_a_bridge_that_dies_fails_its_episodes_by_name_and_is_restarted() -> None:
    source = VerifiersEnv.from_spec(ARITH)
    try:
        bridge = source.bridge()
        bridge.process.kill()
        bridge.process.wait()
        dead = VerifiersEpisode(bridge, "s1")
        with pytest.raises(BridgeError, match=r"verifiers:vf-arith\?scale=2 \(verifiers load_environment\) has"):
            asyncio.run(dead.reset(seed=0))
        (traj,) = play(source, env_tasks(1), adder)  # open() starts a new bridge
        assert traj.termination == "submitted" and source.bridge().alive
    finally:
        source.close()


def test_workbench_run_env_verifiers_stores_what_the_viewer_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main
    from workbench.store import Store
    from workbench.widgets import TrajectoryViewer

    out = tmp_path / "run"
    parts = [{"name": "env.rubric", "params": {"name": n}, "weight": 0.0, "key": n} for n in ("correct", "brief")]
    reward = json.dumps({"name": "rubric-parts", "components": [{"name": "env"}, *parts]})
    argv = ["run", "--env", ARITH, "--episodes", "3", "--policy", "scripted:adder", "--plugin", "verifiers_players"]
    assert main([*argv, "--max-steps", "4", "--max-turn-tokens", "12", "--reward", reward, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the model's text goes to 'content'" in printed and "100% ended by the environment" in printed
    with Store(out) as store:
        stored = list(store.iter_trajectories())
    assert len(stored) == 3 and {t.rewards["env"] for t in stored} == {2.0}
    viewer = TrajectoryViewer(str(out))
    viewer.select(stored[0].id)
    assert viewer.detail["rewards"] == {"env": 2.0, "correct": 1.0, "brief": 1.0, "total": 2.0}
    assert viewer.detail["steps"][0]["outputs"][0]["text"].startswith("Now add ")


def test_workbench_eval_env_verifiers_reports_pass_at_k(tmp_path: Path) -> None:
    from workbench.cli import main

    rows = tmp_path / "sums.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"id": f"q{a}", "question": f"What is {a} + 1?", "info": {"then": 1, "total": a + 2}}) + "\n"
            for a in (3, 5)
        )
    )
    argv = ["eval", "--env", ARITH, "--dataset", str(rows), "-k", "2", "--policy", "scripted:adder"]
    assert main([*argv, "--plugin", "verifiers_players", "--out", str(tmp_path / "ev")]) == 0
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert (report["episodes"], report["mean_reward"], report["pass@2"], report["done_rate"]) == (4, 2.0, 1.0, 1.0)


@pytest.mark.slow
def test_workbench_train_env_verifiers_runs_a_grpo_step_on_a_tiny_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main
    from workbench.store import Store

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = ["Answer with a number.", "What is 1 + 2?", "Now add 3.", "3", "6", "What is 4 + 5?", "15"] * 10
    config = one_step_train_config(tmp_path, texts)
    assert main(["train", str(config), "--env", ARITH, "--episodes", "2"]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "reward: env" in printed and "'global_step': 1" in printed
    with Store(tmp_path / "store") as store:
        stored = list(store.iter_trajectories())
    assert len(stored) == 4 and all(t.metadata["env"] == ARITH and "env" in t.rewards for t in stored)
    for traj in stored:
        (segment,) = traj.segments()
        sampled = sum(len(s.completion_ids) for s in traj.steps)
        assert sum(segment["env_mask"]) == sampled and 0 < sampled <= 16
        assert traj.metadata["env_prompt"][0] == {"role": "system", "content": "Answer with a number."}
        if traj.termination == "submitted":  # two turns: the rubric scored the rollout
            assert set(traj.steps[-1].observation["rubric"]) == {"", "correct", "brief", "num_turns"}
