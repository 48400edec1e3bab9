"""Real TRL steps on a tiny local model: turns before a context trim get gradient, and ZeroSearch's
curriculum follows eq. 1 over a short run whose simulator prompts carry each task's question."""

from __future__ import annotations

import pytest
import torch

from workbench.policies import ScriptedPolicy, TokenizerCodec
from workbench.search.simulated import SimulatedSearch
from workbench.train.config import TrainConfig
from workbench.train.episodes import SearchR1Episodes
from workbench.trajectory import Step, Trajectory

pytestmark = pytest.mark.slow


def trimmed_episodes(tok):
    """Each episode: segment 1 = prompt P0, turn 0 (a search) and its observation; a trim; segment 2 =
    prompt P1 and turn 1 (the answer). Rollouts alternate reward 1 and 0, so grpo advantages are ±0.707."""
    enc = lambda text: tok.encode(text, add_special_tokens=False)  # noqa: E731
    p0, p1 = enc("Question: capital of France"), enc("Question: capital of France. Notes: Paris")
    turn0, obs, turn1 = (
        enc("<search> capital of France </search>"),
        enc("<information> Paris </information>"),
        enc("<answer> Paris </answer>"),
    )

    async def run(tasks, policy):
        out = []
        for i, task in enumerate(tasks):
            t = Trajectory(task=task, termination="submitted", metadata={"r": float(i % 2 == 0)})
            t.steps = [
                Step(
                    index=0,
                    raw="",
                    prompt_ids=p0,
                    completion_ids=turn0,
                    logprobs=[-1.0] * len(turn0),
                    observation_ids=obs,
                ),
                Step(index=1, raw="", prompt_ids=p1, completion_ids=turn1, logprobs=[-1.0] * len(turn1)),
            ]
            out.append(t)
        return out

    return run, p0, turn0


@pytest.mark.parametrize("segments", ["all", "last"])
def test_gradient_reaches_a_turn_before_the_trim(tmp_path, tiny, tasks, segments):
    from workbench.train.trainer import WorkbenchGRPOTrainer

    model, tok = tiny
    run, p0, turn0 = trimmed_episodes(tok)
    cfg = TrainConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=2,
        max_steps=1,
        learning_rate=1e-3,
        max_completion_length=96,
        segments=segments,
    )
    trainer = WorkbenchGRPOTrainer(
        model, tok, tasks, episodes=run, config=cfg, reward=lambda traj: {"total": traj.metadata["r"]}
    )
    seen: list[dict] = []
    base = trainer._compute_loss

    def compute_loss(m, inputs):
        def keep(_module, _inp, out):
            out.retain_grad()
            seen.append({"h": out, "inputs": inputs})

        inner = getattr(m, "module", m)  # DDP-wrapped when torch.distributed is up in this process (vLLM)
        handle = inner.model.norm.register_forward_hook(keep)
        try:
            return base(m, inputs)
        finally:
            handle.remove()

    trainer._compute_loss = compute_loss
    trainer.train()
    assert trainer.state.global_step == 1
    [batch] = seen
    inputs, grad = batch["inputs"], batch["h"].grad.abs().sum(-1)
    P = inputs["prompt_ids"].size(1)
    rows = [
        r
        for r in range(inputs["prompt_ids"].size(0))
        if inputs["completion_ids"][r, : len(turn0)].tolist() == turn0
        and inputs["prompt_ids"][r, P - len(p0) :].tolist() == p0
    ]
    if segments == "last":
        assert rows == []  # the turn before the trim is never trained
        return
    assert len(rows) == 2  # one per rollout
    for r in rows:
        assert inputs["advantages"][r].abs().item() == pytest.approx(0.5 / (0.5**0.5 + 1e-4), abs=1e-4)
        # position t predicts completion token t - start + 1; packed rows (workbench.train.logprobs) begin
        # at position 0, so their completion starts after the row's own prompt, not the padded batch's
        packed = grad.size(1) < P + inputs["completion_ids"].size(1)
        start = int(inputs["prompt_mask"][r].sum()) if packed else P
        predicts = grad[r, start - 1 : start - 1 + len(turn0)]
        assert torch.all(predicts > 0)


def sim_writer(context: str, turn: int) -> str:
    query = context.split("Query: ")[1].split("\n")[0]
    return "\n".join(f"Doc {i}: (Title: {query} {i}) A passage about {query}." for i in (1, 2))


def test_zerosearch_curriculum_follows_eq1_over_a_real_run(tmp_path, tiny, tasks):
    """ZeroSearch eq. 1, p_i = p_s + (b^{i/m} - 1)/(b - 1)·(p_e - p_s), with p_s = 0, p_e = .5, b = 4, m = 3
    (the run's 3 optimizer steps; rollouts of step i use p_i, i = 1, 2, 3 as ZeroSearch's verl loop counts):
      i = 1: 4^{1/3} = 1.587401 → (.587401/3)·.5 = .097900
      i = 2: 4^{2/3} = 2.519842 → (1.519842/3)·.5 = .253307
      i = 3: i = m → p_e = .5
    Every rollout searches once, so each step logs 4 simulator calls; each prompt names its task's question
    and first gold answer."""
    from workbench.train.trainer import WorkbenchGRPOTrainer

    model, tok = tiny
    sim = SimulatedSearch(ScriptedPolicy(sim_writer), p_start=0.0, p_end=0.5, b=4.0, total_steps=3, seed=0, top_k=2)
    runner = SearchR1Episodes(sim, max_turns=2, max_turn_tokens=16, max_total_tokens=160)
    acting = ScriptedPolicy.from_turns(
        ["<search> capital city </search>", "<answer> Paris </answer>"], codec=TokenizerCodec(tok)
    )
    cfg = TrainConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=3,
        learning_rate=1e-3,
        max_completion_length=160,
        max_turns=2,
        max_turn_tokens=16,
    )
    trainer = WorkbenchGRPOTrainer(
        model, tok, tasks, episodes=runner, config=cfg, reward="zerosearch", policy_factory=lambda _trainer: acting
    )
    assert trainer.curricula == [sim]
    trainer.train()
    assert trainer.state.global_step == 3
    by_step: dict[int, set] = {}
    for call in sim.calls:
        by_step.setdefault(call.step, set()).add(round(call.p, 6))
    assert by_step == {1: {0.0979}, 2: {0.253307}, 3: {0.5}}
    assert [sum(c.step == i for c in sim.calls) for i in (1, 2, 3)] == [4, 4, 4]
    questions = {t.id: (t.question, t.golden_answers[0]) for t in tasks}
    for call in sim.calls:
        question, gold = questions[call.task_id]
        assert f'question: "{question}" whose answer is {gold}.' in call.prompt
        assert call.question == question and call.useful == (not call.noisy)
    # the trajectories keep each hit's noisy flag and p
    last = trainer.last_trajectories[0].steps[0].host_calls[0].result
    assert {"noisy", "p"} <= set(last[0]) and last[0]["p"] == pytest.approx(0.5)
