"""Asynchronous RL on a tiny local model with real TRL steps: k = 0 reproduces the synchronous
trainer, k = 2 keeps staleness within 2 and drops nothing, every turn records the version that
sampled it, and a failing producer stops the run with a clear error instead of a hang."""

from __future__ import annotations

import pytest
import torch
from kernel_procs import kernels_left
from test_trainer import make, snapshot, spread_reward

from workbench.errors import ConfigError, TrainingError

pytestmark = pytest.mark.slow


def losses(trainer) -> list[float]:
    return [row["loss"] for row in trainer.state.log_history if "loss" in row]


def test_max_staleness_zero_reproduces_the_synchronous_trainer(tmp_path, tiny_model_dir, tasks, retriever):
    """Three steps each way from the same weights and seed: losses and weights within 1e-5."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    runs = {}
    for name, extra in (("sync", {}), ("async", {"async_rollouts": True, "max_staleness": 0})):
        tiny = AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)
        trainer = make(tmp_path / name, tiny, tasks, retriever, max_steps=3, **extra)
        trainer.train()
        runs[name] = (losses(trainer), snapshot(trainer.model), trainer)
    (sync_loss, sync_w, _), (async_loss, async_w, trainer) = runs["sync"], runs["async"]
    assert len(sync_loss) == len(async_loss) == 3
    assert async_loss == pytest.approx(sync_loss, abs=1e-5)
    assert max((sync_w[k] - async_w[k]).abs().max().item() for k in sync_w) <= 1e-5
    stale = [row["async/staleness/max"] for row in trainer.state.log_history if "async/staleness/max" in row]
    assert stale and max(stale) == 0


def test_staleness_two_runs_ahead_within_bound_and_records_versions(tmp_path, tiny, tasks, retriever):
    trainer = make(tmp_path, tiny, tasks, retriever, max_steps=4, async_rollouts=True, max_staleness=2)
    before = snapshot(trainer.model)
    trainer.train()
    assert trainer.state.global_step == 4
    assert any(not torch.equal(before[k], v) for k, v in trainer.model.named_parameters())
    rows = [r for r in trainer.state.log_history if "async/staleness/max" in r]
    assert rows and max(r["async/staleness/max"] for r in rows) <= 2
    assert all(r["async/groups_dropped"] == 0 for r in rows)
    assert max(r["async/staleness/max"] for r in rows) >= 1  # the producer did run ahead
    for r in rows:  # the turns' staleness histogram covers every turn; the trainer's wait is timed
        assert sum(r[f"async/turn_staleness/share_{lag}"] for lag in range(3)) == pytest.approx(1.0)
        assert r["async/trainer_wait_s"] >= 0
    for traj in trainer.last_trajectories:
        assert all(step.policy_version is not None for step in traj.steps)
        assert traj.lineage["start_version"] <= min(step.policy_version for step in traj.steps)
    weights = [r["async/behaviour_weight/max"] for r in trainer.state.log_history if "async/behaviour_weight/max" in r]
    assert weights and all(w > 0 for w in weights)


def test_a_failing_producer_is_a_clear_error_not_a_hang(tmp_path, tiny, tasks, retriever):
    trainer = make(tmp_path, tiny, tasks, retriever, async_rollouts=True, max_staleness=1)

    async def broken(tasks, policy):
        raise RuntimeError("search backend went away")

    trainer.episodes = broken
    trainer.overlapped.producer.episodes = broken
    with pytest.raises(TrainingError, match="search backend went away"):
        trainer.train()


def record_batches(trainer) -> list[list[str]]:
    """The questions of each batch the trainer's producer draws, in order."""
    drawn: list[list[str]] = []
    producer = trainer.overlapped.producer
    draw = producer.next_batch

    def recorded():
        batch = draw()
        drawn.append([t.question for t in batch])
        return batch

    producer.next_batch = recorded
    return drawn


def test_resume_starts_at_the_checkpoint_version_on_the_tasks_of_an_uninterrupted_run(
    tmp_path, tiny_model_dir, tasks, retriever
):
    """Three asynchronous steps (k = 1) with a checkpoint after each; a new trainer resumed from
    checkpoint-2 trains the third step on the batch the uninterrupted run trained there, its rollout copy
    starting from the checkpoint's weights, every turn stamped with a version >= 2 (before the fix it
    waited for wave 2 that admission at version 0 never started, until async_timeout_s)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def fresh():
        return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)

    settings = dict(max_steps=3, async_rollouts=True, max_staleness=1, save_steps=1, async_timeout_s=300.0)
    first = make(tmp_path, fresh(), tasks, retriever, **settings)
    drawn_first = record_batches(first)
    first.train()
    checkpoint = tmp_path / "out" / "checkpoint-2"
    saved = AutoModelForCausalLM.from_pretrained(checkpoint).state_dict()

    resumed = make(tmp_path, fresh(), tasks, retriever, **settings)
    drawn_resumed = record_batches(resumed)
    starts = []
    start = resumed.overlapped._start

    def start_and_look(version):
        start(version)
        starts.append((version, {k: v.clone() for k, v in resumed.overlapped.rollout_model.state_dict().items()}))

    resumed.overlapped._start = start_and_look
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert resumed.state.global_step == 3
    [(version, weights)] = starts
    assert version == 2
    assert all(torch.equal(weights[k], saved[k]) for k in saved)
    assert drawn_resumed[0] == drawn_first[2]
    for traj in resumed.last_trajectories:
        assert traj.lineage["start_version"] >= 2
        assert all(step.policy_version >= 2 for step in traj.steps)


def test_loglinear_prox_runs_in_the_loss_without_a_forward_of_its_own(tmp_path, tiny, tasks, retriever):
    """prox="loglinear", k = 2, three steps: the no-grad π_prox forward never runs; in the loss of the
    step at version v (this update makes v + 1, so v_prox = v), a token sampled by v has
    alpha = (v - v)/(v + 1 - v) = 0, so log π_prox = its behaviour logprob, and one sampled by v - 1 has
    alpha = (v - (v - 1))/(v + 1 - (v - 1)) = 1/2, so log π_prox is the mean of its behaviour and current
    logprobs; the behaviour weight is exp(log π_prox - log π_behav) under the cap of 5."""
    trainer = make(
        tmp_path, tiny, tasks, retriever, max_steps=3, async_rollouts=True, max_staleness=2, prox="loglinear"
    )
    forwards, seen = [], []
    trainer.current_logps = lambda out: forwards.append(1)
    approximate = trainer.overlapped.approximate_prox

    def look(inputs, logp):
        approximate(inputs, logp)
        seen.append(
            (
                trainer.state.global_step,
                {
                    k: inputs[k].clone()
                    for k in (
                        "sampling_per_token_logps",
                        "behaviour_versions",
                        "old_per_token_logps",
                        "importance_sampling_ratio",
                        "completion_mask",
                    )
                },
                logp.detach().clone(),
            )
        )

    trainer.overlapped.approximate_prox = look
    trainer.train()
    assert trainer.state.global_step == 3 and forwards == [] and seen
    lags = set()
    for v, inputs, logp in seen:
        behav, versions, prox = (
            inputs["sampling_per_token_logps"],
            inputs["behaviour_versions"],
            inputs["old_per_token_logps"],
        )
        sampled = (versions >= 0) & (inputs["completion_mask"] > 0) & ~torch.isnan(behav)
        fresh, one_behind = sampled & (versions == v), sampled & (versions == v - 1)
        torch.testing.assert_close(prox[fresh], behav[fresh])
        torch.testing.assert_close(prox[one_behind], (behav[one_behind] + logp[one_behind]) / 2)
        weight = torch.exp(prox - behav)[sampled]
        expected = torch.where(weight > 5.0, torch.zeros_like(weight), weight)
        torch.testing.assert_close(inputs["importance_sampling_ratio"][sampled], expected)
        lags |= {int(x) for x in (v - versions[sampled]).unique()}
    assert {0, 1} <= lags and max(lags) <= 2  # both cases above were met


def test_async_settings_are_checked():
    from workbench.train.config import TrainConfig

    with pytest.raises(ConfigError, match="max_staleness"):
        TrainConfig(async_rollouts=True, max_staleness=-1)
    with pytest.raises(ConfigError, match="behaviour_cap_action"):
        TrainConfig(async_rollouts=True, behaviour_cap_action="drop")
    with pytest.raises(ConfigError, match="dynamic_sampling"):
        TrainConfig(async_rollouts=True, dynamic_sampling=True)
    with pytest.raises(ConfigError, match="prox"):
        TrainConfig(async_rollouts=True, prox="linear")


def test_the_versioned_policy_runs_the_agent_settings_its_model_carries(tiny):
    """A model stamped with agent settings (the compact prompt it trains with) keeps them behind the weights'
    gate: the episode reads `policy.agent_settings` (without them it rendered the full prompt and overflowed a
    512-position window)."""
    from workbench.train.episode_producer import VersionedWeights
    from workbench.train.policy import live_policy

    model, tok = tiny
    model.config.workbench_agent = {"prompt": "compact", "max_context_tokens": 480}
    try:
        policy = VersionedWeights(model.load_state_dict).policy(live_policy(model, tok, seed=7))
        assert policy.agent_settings == {"prompt": "compact", "max_context_tokens": 480}
    finally:
        del model.config.workbench_agent


def test_an_episode_straddling_a_weight_sync_records_each_turns_version_and_logprobs(tiny):
    """Turn 1 samples with version 0; the trainer publishes version 1; turn 2 samples with it. Each
    turn's logprobs are those of its own version's weights, recomputed by a forward pass."""
    from workbench.kernel.sync import run_sync
    from workbench.policies.base import SamplingParams
    from workbench.train.episode_producer import VersionedWeights
    from workbench.train.policy import live_policy

    model, tok = tiny
    trained = {k: v + 0.05 * torch.randn_like(v) for k, v in model.state_dict().items()}  # "version 1"
    original = {k: v.clone() for k, v in model.state_dict().items()}
    weights = VersionedWeights(model.load_state_dict)
    policy = weights.policy(live_policy(model, tok, seed=7))
    params = SamplingParams(max_new_tokens=6, temperature=1.0)
    prompt = tok("What is the capital of France?")["input_ids"]
    [first] = run_sync(policy.generate([prompt], params))
    weights.publish(1, trained)
    context = prompt + list(first.token_ids)
    [second] = run_sync(policy.generate([context], params))
    assert (first.policy_version, second.policy_version) == (0, 1)

    def recomputed(state, ctx, ids):
        model.load_state_dict(state)
        with torch.no_grad():
            logits = model(torch.tensor([ctx + ids])).logits[0, len(ctx) - 1 : -1]
        return torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(ids).unsqueeze(1)).squeeze(1).tolist()

    assert first.logprobs == pytest.approx(recomputed(original, prompt, list(first.token_ids)), abs=1e-4)
    assert second.logprobs == pytest.approx(recomputed(trained, context, list(second.token_ids)), abs=1e-4)


@pytest.mark.parametrize("action", ["mask", "clamp"])
@pytest.mark.parametrize("per_token", [False, True])
def test_the_trainers_loss_is_the_reference_decoupled_ppo_loss(tmp_path, tiny, tasks, retriever, action, per_token):
    """TRL's loss with the behaviour weight (the trainer's path) equals `decoupled_ppo_loss` (the
    formula, checked by hand in test_decoupled.py) in value and in every parameter's gradient, for a
    per-sequence (grpo-like) and a per-token (reinforce_pp-like) advantage, both cap actions."""
    from workbench.train.decoupled import behaviour_weights, decoupled_ppo_loss

    trainer = make(tmp_path, tiny, tasks, retriever, async_rollouts=True, behaviour_cap_action=action)
    model = trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, 300, (2, 3), generator=gen)
    completion = torch.randint(3, 300, (2, 4), generator=gen)
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 1, 1]])  # completion padding and an observation token
    ids, attn = torch.cat([prompt, completion], 1), torch.ones(2, 7, dtype=torch.long)
    with torch.no_grad():
        logp, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, attn, 4)
    prox = logp + torch.tensor([[0.1, -0.3, 0.0, 0.2], [-0.1, 0.0, 0.25, -0.2]])  # a trust region to clip in
    behav = prox - torch.log(torch.tensor([[2.0, 0.5, 8.0, 1.0], [1.0, 6.0, 0.9, 3.0]]))  # w, two over the cap 5
    adv = torch.tensor([[1.0, -2.0, 0.5, 3.0], [-1.0, 2.0, -0.5, 1.0]]) if per_token else torch.tensor([1.5, -0.7])
    weight, _ = behaviour_weights(prox, behav, mask, cap=5.0, cap_action=action)
    inputs = {
        "prompt_ids": prompt,
        "prompt_mask": torch.ones_like(prompt),
        "completion_ids": completion,
        "completion_mask": torch.ones_like(completion),
        "tool_mask": mask,
        "advantages": adv,
        "old_per_token_logps": prox,
        "importance_sampling_ratio": weight,
        "num_items_in_batch": mask.sum(),
    }
    model.zero_grad()
    ours = trainer._compute_loss(model, inputs)
    ours.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    live, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, attn, 4)
    eps, high = trainer.wb_config.epsilon, trainer.wb_config.epsilon_high
    reference, _ = decoupled_ppo_loss(live, prox, behav, adv, mask, epsilon=eps, epsilon_high=high, cap_action=action)
    reference.backward()
    assert ours.item() == pytest.approx(reference.item(), abs=1e-6)
    for name, p in model.named_parameters():
        if p.grad is not None:
            assert torch.allclose(grads[name], p.grad, atol=1e-6), name


def test_nbagent_episodes_in_real_kernels_train_asynchronously(tmp_path, tiny, tasks):
    """A real run of three steps with k = 2 on NB-Agent episodes (sandboxed kernels): staleness within
    2, nothing dropped, every turn versioned, and the kernel pool closes after the run."""
    from workbench.train.config import TrainConfig
    from workbench.train.run import NBAgentEpisodes
    from workbench.train.trainer import WorkbenchGRPOTrainer

    model, tok = tiny
    torch.manual_seed(1234)
    cfg = TrainConfig(
        output_dir=str(tmp_path / "out"),
        episode_kind="nbagent",
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=3,
        learning_rate=1e-3,
        max_completion_length=96,
        max_turns=2,
        max_turn_tokens=16,
        async_rollouts=True,
        max_staleness=2,
    )
    episodes = NBAgentEpisodes(cfg)
    trainer = WorkbenchGRPOTrainer(model, tok, tasks, episodes=episodes, config=cfg, reward=spread_reward)
    try:
        trainer.train()
    finally:
        episodes.close()
    rows = [r for r in trainer.state.log_history if "async/staleness/max" in r]
    assert trainer.state.global_step == 3 and len(rows) == 3
    assert max(r["async/staleness/max"] for r in rows) <= 2 and all(r["async/groups_dropped"] == 0 for r in rows)
    assert all(s.policy_version is not None for t in trainer.last_trajectories for s in t.steps)
    assert all(t.termination for t in trainer.last_trajectories)
    assert kernels_left() == []  # the producer's waves and the pool released every kernel
