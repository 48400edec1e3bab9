"""TrainConfig loading/validation, trajectory → sample conversion, dynamic sampling, Search-R1 episodes."""

from __future__ import annotations

import asyncio

import pytest
from train_helpers import ScriptedPolicy

from workbench.errors import ConfigError
from workbench.train.config import TrainConfig
from workbench.train.episodes import SearchR1Episodes
from workbench.train.rewards import resolve_reward
from workbench.train.rollout import dynamic_sampling, trajectory_sample
from workbench.trajectory import Step, Task, Trajectory


def test_config_loads_from_toml_yaml_and_kwargs(tmp_path):
    (tmp_path / "a.toml").write_text('[train]\nestimator = "hrpo"\nmax_steps = 3\n')
    (tmp_path / "a.yaml").write_text("estimator: adpo\nlearning_rate: 0.001\n")
    assert TrainConfig.load(tmp_path / "a.toml").estimator == "hrpo"
    cfg = TrainConfig.load(tmp_path / "a.yaml", max_steps=7)
    assert (cfg.estimator, cfg.learning_rate, cfg.max_steps) == ("adpo", 0.001, 7)
    assert all(TrainConfig.fields_help().values())  # every field documented


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"estimator": "ppo"}, "estimator"),
        ({"num_generations": 1}, "num_generations"),
        ({"per_device_train_batch_size": 3}, "multiple"),
        ({"episode_kind": "web"}, "episode_kind"),
        ({"use_vllm": True, "estimator": "hrpo", "vllm_mode": "server"}, "colocate"),
    ],
)
def test_config_errors_name_the_fix(kw, match):
    with pytest.raises(ConfigError, match=match):
        TrainConfig(**kw)
    with pytest.raises(ConfigError, match="unknown field"):
        TrainConfig.from_dict({"lr": 1})


def test_trajectory_sample_masks_observations_and_ends_with_eos():
    t = Trajectory(task=Task(id="a", question="q"), termination="submitted")
    t.steps = [
        Step(
            index=0, raw="", prompt_ids=[1, 2], completion_ids=[5, 6], logprobs=[-0.1, -0.2], observation_ids=[7, 8, 9]
        ),
        Step(index=1, raw="", completion_ids=[10], logprobs=[-0.3], observation_ids=[11]),
    ]
    s = trajectory_sample(t, eos_token_id=99, max_completion_length=50)
    assert s["prompt_ids"] == [1, 2]
    assert s["completion_ids"] == [5, 6, 7, 8, 9, 10, 99]  # trailing observation dropped, EOS added
    assert s["env_mask"] == [1, 1, 0, 0, 0, 1, 0]
    assert s["step_index"] == [0, 0, -1, -1, -1, 1, -1]
    assert s["logprobs"][:2] == [-0.1, -0.2]
    # a trim starts a new segment: the last one is trained on
    t.steps[1].prompt_ids = [3]
    s = trajectory_sample(t, eos_token_id=99, max_completion_length=2)
    assert s["prompt_ids"] == [3] and s["completion_ids"] == [10, 99] and s["step_index"] == [1, -1]


def _traj(task_id: str, reward: float) -> Trajectory:
    return Trajectory(task=Task(id=task_id, question=task_id), rewards={"total": reward})


def test_dynamic_sampling_counts_prompts_and_keeps_what_stays_flat():
    batch = [_traj("a", 1), _traj("a", 1), _traj("b", 0), _traj("b", 1)]
    fresh = iter([[Task(id="c", question="c")], [Task(id="d", question="d")]])
    outcomes = {"c": [0.0, 0.0], "d": [0.0, 1.0]}

    def run(tasks):
        return [_traj(t.id, outcomes[t.id][i % 2]) for i, t in enumerate(tasks)]

    report = dynamic_sampling(batch, 2, lambda n: next(fresh), run, max_rounds=3)
    assert [t.task.id for t in batch] == ["d", "d", "b", "b"]
    assert (report.rounds, report.prompts_refilled, report.zero_std_groups_left) == (2, 2, 0)
    stuck = [_traj("a", 0), _traj("a", 0)]
    report = dynamic_sampling(stuck, 2, lambda n: [Task(id="c", question="c")], run, max_rounds=2)
    assert report.zero_std_groups_left == 1 and len(stuck) == 2  # no crash, no shrinking batch


def test_search_r1_episode_is_token_exact(retriever):
    policy = ScriptedPolicy(
        ["<think>look</think><search> capital of France </search> trailing", "<answer> Paris </answer>"]
    )
    runner = SearchR1Episodes(retriever, max_turns=3, top_k=2)
    task = Task(id="a", question="What is the capital of France?", golden_answers=["Paris"])
    [traj] = asyncio.run(runner([task], policy))
    assert traj.termination == "submitted" and traj.final_answer == "Paris"
    assert retriever.queries == ["capital of France"]
    first = traj.steps[0]
    assert first.raw.endswith("</search>")  # cut at the stop string
    assert "<information>Doc 1(Title: Paris) Paris is the capital of France." in first.observation_text
    assert first.observation_ids == policy.codec.encode(first.observation_text)
    [seg] = traj.segments()
    assert seg["completion_ids"] == first.completion_ids + first.observation_ids + traj.steps[1].completion_ids
    assert resolve_reward("search_r1").score(traj)["total"] == 1.0


def test_reward_resolution():
    em = resolve_reward("exact_match")
    hit = _traj("a", 0)
    hit.task.golden_answers, hit.final_answer = ["The Paris"], "paris!"
    assert em.score(hit)["total"] == 1.0
    assert resolve_reward(lambda t: 0.5).score(_traj("a", 0)) == {"total": 0.5}
    with pytest.raises(ConfigError, match="reward"):
        resolve_reward("no-such-reward-spec")
