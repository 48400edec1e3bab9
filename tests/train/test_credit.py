"""Per-turn credit, context segments, ASearcher/REINFORCE estimators, hop-group batches and presets,
each checked against values worked out by hand from the papers' equations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.train import advantages as A
from workbench.train.config import ESTIMATORS, TrainConfig
from workbench.train.presets import PRESETS, preset_sources
from workbench.train.rollout import step_rewards, trajectory_samples
from workbench.train.sampler import HopGroupSampler
from workbench.trajectory import Step, Task, Trajectory

EOS = 99


def three_turns(trim_before: int | None = None) -> Trajectory:
    """Turn k emits tokens [10k+1, 10k+2] then sees observation [10k+5]; Step.reward = (.1, .2, 1.0)."""
    t = Trajectory(task=Task(id="q", question="q"), termination="submitted", rewards={"total": 1.3})
    for k, r in enumerate((0.1, 0.2, 1.0)):
        t.steps.append(
            Step(
                index=k,
                raw="",
                completion_ids=[10 * k + 1, 10 * k + 2],
                logprobs=[-0.1, -0.2],
                observation_ids=[10 * k + 5],
                reward=r,
                prompt_ids=[1, 2] if k == 0 else ([3, 4, k] if k == trim_before else None),
            )
        )
    return t


def row_adv(trajs, estimator="reinforce_pp", segments="all", **cfg):
    from workbench.train.estimators import Batch
    from workbench.train.trainer import row_advantages

    config = TrainConfig(estimator=estimator, segments=segments, **cfg)
    samples, row_traj = [], []
    for i, t in enumerate(trajs):
        for s in trajectory_samples(t, EOS, 100, segments):
            samples.append(s)
            row_traj.append(i)
    width = max(len(s["completion_ids"]) for s in samples)
    rows = row_advantages(
        config.make_estimator(),
        Batch(trajs, config.num_generations, config.epsilon),
        0,
        row_traj,
        [s["step_index"] for s in samples],
        width,
    )
    return samples, rows.values, rows.eps_high, rows.keep


def test_per_turn_returns_and_whitening_on_each_turns_tokens():
    """L0 eq. 2-3 (REINFORCE++), γ = 0.5, rewards r = (.1, .2, 1.0):
    G_3 = 1.0; G_2 = .2 + .5·1.0 = .7; G_1 = .1 + .5·.7 = .45.
    mean = (.45 + .7 + 1.0)/3 = .716667; deviations (-.266667, -.016667, .283333);
    unbiased var = (.071111 + .000278 + .080278)/2 = .075833; std = .275379
    → whitened (-.968364, -.060523, 1.028887), each on its own turn's two model tokens."""
    t = three_turns()
    assert step_rewards(t) == [0.1, 0.2, 1.0]
    assert A.discounted_returns(step_rewards(t), 0.5) == pytest.approx([0.45, 0.7, 1.0])
    [s], adv, _, _ = row_adv([t], gamma=0.5)
    assert s["completion_ids"] == [1, 2, 5, 11, 12, 15, 21, 22, EOS]
    want = [-0.968364, -0.968364, 0, -0.060523, -0.060523, 0, 1.028887, 1.028887, 0]
    assert adv[0].tolist() == pytest.approx(want, abs=1e-5)


def test_without_turn_rewards_the_total_sits_on_the_last_turn():
    t = three_turns()
    for s in t.steps:
        s.reward = None
    assert step_rewards(t) == [0.0, 0.0, 1.3]


def test_each_context_segment_is_a_sample_with_its_turns_returns():
    """A trim before turn 2 (0-based) splits the trajectory into [turn 0, turn 1] and [turn 2]. With
    segments='all' both are trained: the first gets G_1, G_2, the second G_3 (same whitening as above);
    with 'last' only the second exists."""
    t = three_turns(trim_before=2)
    samples, adv, _, _ = row_adv([t], gamma=0.5)
    assert [s["prompt_ids"] for s in samples] == [[1, 2], [3, 4, 2]]
    # the first segment's trailing observation is dropped and it ends with a masked EOS
    assert samples[0]["completion_ids"] == [1, 2, 5, 11, 12, EOS]
    assert samples[0]["env_mask"] == [1, 1, 0, 1, 1, 0]
    assert samples[1]["completion_ids"] == [21, 22, EOS]
    assert adv[0].tolist()[:6] == pytest.approx([-0.968364, -0.968364, 0, -0.060523, -0.060523, 0], abs=1e-5)
    assert adv[1].tolist()[:3] == pytest.approx([1.028887, 1.028887, 0], abs=1e-5)
    last, _, _, _ = row_adv([t], gamma=0.5, segments="last")
    assert len(last) == 1 and last[0]["prompt_ids"] == [3, 4, 2]


def test_scalar_estimators_repeat_the_trajectory_advantage_on_every_segment():
    """grpo over two rollouts of one question, totals (1.3, 0.3): mean .8, unbiased std .707107
    → ±.5/(.707107 + 1e-4) = ±.707007; both segments of the first trajectory carry +.707007."""
    a, b = three_turns(trim_before=2), three_turns()
    b.rewards = {"total": 0.3}
    samples, adv, _, _ = row_adv([a, b], estimator="grpo", num_generations=2, per_device_train_batch_size=2)
    assert len(samples) == 3
    assert adv.tolist() == pytest.approx([0.707007, 0.707007, -0.707007], abs=1e-5)


def test_asearcher_centres_biases_scales_and_drops_flat_groups():
    """ASearcher (asearcher.py: r - group mean, drop all-zero centred groups; AReaL: (c - .5)·10, clip 20):
    group 1 (1, 0): mean .5, c = (.5, -.5) → ((.5-.5)·10, (-.5-.5)·10) = (0, -10)
    group 2 (.4, .4): c = (0, 0) → dropped, advantage 0
    group 3 (1, .2): mean .6, c = (.4, -.4) → (-1, -9)"""
    adv, keep = A.asearcher([1.0, 0.0, 0.4, 0.4, 1.0, 0.2], group_size=2)
    assert adv.tolist() == pytest.approx([0.0, -10.0, 0.0, 0.0, -1.0, -9.0], abs=1e-5)
    assert keep.tolist() == [True, True, False, False, True, True]
    # a large reward range is clipped at ±20: (1 + 3 - .5)·10 = 35 → 20 (rewards 8, 0: c = ±4)
    assert A.asearcher([8.0, 0.0], 2)[0].tolist() == pytest.approx([20.0, -20.0])


def test_token_whitening_weights_each_sequence_by_its_loss_tokens():
    """AReaL masked_normalization: values (0, -10, -1) over 2, 1, 1 tokens:
    mean = (0·2 - 10 - 1)/4 = -2.75; E[v²] = (0 + 100 + 1)/4 = 25.25; var = 25.25 - 7.5625 = 17.6875;
    std = 4.205651 → ((0 + 2.75), (-10 + 2.75), (-1 + 2.75)) / (4.205651 + 1e-5)."""
    out = A.token_whiten([0.0, -10.0, -1.0], [2, 1, 1])
    s = 4.205651 + 1e-5
    assert out.tolist() == pytest.approx([2.75 / s, -7.25 / s, 1.75 / s], abs=1e-5)


def test_reinforce_is_the_raw_reward_and_every_estimator_is_registered():
    assert A.reinforce([1.0, 0.25]).tolist() == [1.0, 0.25]
    assert all(callable(getattr(A, name)) for name in ESTIMATORS)  # each built-in wraps its function here


def test_hop_group_sampler_never_leaves_a_question_alone_in_its_hop():
    """Hops 4:3:2:1 (8, 6, 4, 2 tasks), groups of 2, batches of 4 → 10 groups, 5 batches per epoch."""
    hops = [1] * 8 + [2] * 6 + [3] * 4 + [4] * 2
    sampler = HopGroupSampler(hops, group_size=2, batch_size=4, repeat_count=1, seed=0)
    order = list(sampler)
    assert len(order) == len(sampler) == 20 and sorted(order) == list(range(20))
    for g in range(0, 20, 2):
        assert hops[order[g]] == hops[order[g + 1]]
    with pytest.raises(ConfigError, match="hop 4: 2"):
        HopGroupSampler(hops, group_size=3, batch_size=6)


def test_hop_group_sampler_repeats_each_batch_like_trls_sampler():
    sampler = HopGroupSampler([1, 1, 2, 2], group_size=2, batch_size=2, repeat_count=3, seed=1)
    order = list(sampler)
    assert order[:2] * 3 == order[:6] and len(order) == 12


@pytest.mark.parametrize(
    "name, key",
    [
        ("drzero_proposer", {"estimator": "hrpo", "max_steps": 50, "beta": 0.0, "warmup_ratio": 0.03}),
        ("drzero_solver", {"estimator": "grpo", "num_generations": 5, "epsilon": 0.2, "learning_rate": 1e-6}),
        (
            "zerosearch",
            {
                "estimator": "reinforce",
                "num_generations": 5,
                "sim_b": 4.0,
                "sim_p_end": 0.25,
                "search_engine": "simulated",
                "reward": "zerosearch",
            },
        ),
        (
            "agent0_executor",
            {"estimator": "adpo", "num_generations": 16, "beta": 0.01, "max_steps": 40, "adpo_min_scale": 0.6},
        ),
        ("agent0_curriculum", {"estimator": "grpo", "num_generations": 4, "max_steps": 5, "beta": 0.01}),
        (
            "asearcher",
            {
                "estimator": "asearcher",
                "num_generations": 16,
                "epsilon": 0.4,
                "max_turns": 32,
                "asearcher_reward_bias": -0.5,
                "asearcher_reward_scaling": 10.0,
            },
        ),
        ("l0", {"estimator": "reinforce_pp", "gamma": 0.95, "segments": "all", "beta": 0.001}),
    ],
)
def test_presets_load_with_the_papers_values(name, key):
    cfg = TrainConfig.preset(name)
    for field, value in key.items():
        assert getattr(cfg, field) == value, field
    sources = preset_sources(name)
    assert set(sources) == set(PRESETS[name]) and all(sources.values())
    assert f"[{name}: " in TrainConfig.fields_help(name)["estimator"]


def test_preset_global_batches_match_the_papers():
    """prompts × rollouts per step: Dr. Zero 256×1 and 256×5, ZeroSearch 64×5, Agent0 128×16 and 128×4,
    ASearcher 128×16, L0 64×4."""
    sizes = {
        "drzero_proposer": 256,
        "drzero_solver": 1280,
        "zerosearch": 320,
        "agent0_executor": 2048,
        "agent0_curriculum": 512,
        "asearcher": 2048,
        "l0": 256,
    }
    for name, n in sizes.items():
        c = TrainConfig.preset(name)
        assert c.per_device_train_batch_size * c.gradient_accumulation_steps == n, name


def test_cli_preset_then_file_then_overrides(tmp_path):
    from workbench.cli.train import load_config

    path = tmp_path / "t.toml"
    path.write_text("[train]\nmax_steps = 7\n")
    cfg = load_config(str(path), "zerosearch", {"sim_p_end": 0.75})
    assert (cfg.estimator, cfg.max_steps, cfg.sim_p_end) == ("reinforce", 7, 0.75)
    with pytest.raises(ConfigError, match="unknown training preset"):
        TrainConfig.preset("nope")
    with pytest.raises(ConfigError, match="segments"):
        TrainConfig(segments="first")


@st.composite
def trajectories(draw):
    n = draw(st.integers(1, 6))
    t = Trajectory(task=Task(id="h", question="q"), termination=draw(st.sampled_from(["submitted", "max_steps"])))
    for k in range(n):
        comp = draw(st.lists(st.integers(0, 98), max_size=4))
        obs = draw(st.lists(st.integers(0, 98), max_size=3))
        trim = k == 0 or draw(st.booleans())
        t.steps.append(
            Step(
                index=k,
                raw="",
                completion_ids=comp,
                observation_ids=obs,
                prompt_ids=draw(st.lists(st.integers(0, 98), min_size=1, max_size=3)) if trim else None,
            )
        )
    return t


@settings(max_examples=200, deadline=None)
@given(trajectories())
def test_segments_keep_every_model_token_once_with_its_turn(t):
    samples = trajectory_samples(t, EOS, 10_000, "all")
    got = [
        (tok, k)
        for s in samples
        for tok, m, k in zip(s["completion_ids"], s["env_mask"], s["step_index"], strict=True)
        if m
    ]
    want = [(tok, k) for k, step in enumerate(t.steps) for tok in step.completion_ids]
    assert got == want
    for s in samples:
        assert len(s["completion_ids"]) == len(s["env_mask"]) == len(s["logprobs"]) == len(s["step_index"])
        assert all(k == -1 for m, k in zip(s["env_mask"], s["step_index"], strict=True) if not m)


def test_l0_spec_per_turn_rewards_reach_the_returns():
    """L0 (§3, code defaults): r_i = 0.8·qa_i + 0.1·format_i + 0.1·code_i, format_i = code_i = 1/T for a
    well-formed step whose cell printed without error, qa only on the last step (0.9·EM + 0.1·has_answer = 1).
    T = 3: r = (.2/3, .2/3, .2/3 + .8) = (.066667, .066667, .866667), summing to the total 1.0.
    γ = .95: G_3 = .866667; G_2 = .066667 + .95·.866667 = .89; G_1 = .066667 + .95·.89 = .912167."""
    from workbench.train.rewards import resolve_reward, score_trajectory

    t = Trajectory(
        task=Task(id="a", question="Capital of France?", golden_answers=["Paris"]),
        termination="submitted",
        final_answer="Paris",
    )
    for k in range(3):
        t.steps.append(
            Step(
                index=k,
                raw="<think>I should look this up now.</think><code>print(search('France'))</code>",
                think="I should look this up now.",
                code="print(search('France'))",
                observation={
                    "outputs": [{"type": "stream", "name": "stdout", "text": "Paris"}],
                    "ok": True,
                    "error": None,
                },
            )
        )
    assert score_trajectory(resolve_reward("l0"), t)["total"] == pytest.approx(1.0)
    assert step_rewards(t) == pytest.approx([0.2 / 3, 0.2 / 3, 0.2 / 3 + 0.8])
    assert A.discounted_returns(step_rewards(t), 0.95) == pytest.approx([0.912167, 0.89, 0.866667], abs=1e-6)
