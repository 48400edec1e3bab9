"""`python -m workbench.demo --mode agent0`: the demo's sizes mapped onto `Agent0Config`, Agent0's per-iteration
figures, and a smoke run on the tiny model (the curriculum reward spec, majority-vote pseudo-labels, the band filter,
ADPO on the solver, summary.json's evolution rows and what the EvolutionDashboard reads)."""

from __future__ import annotations

import json

import pytest

from workbench.demo.config import PRESETS, DemoConfig, preset_name
from workbench.demo.modes import AGENT0_TITLES, agent0_lines, agent0_summary
from workbench.errors import ConfigError


def test_every_drzero_preset_has_an_agent0_twin_with_its_own_run_dir():
    for name, cfg in PRESETS.items():
        if cfg.mode == "agent0":
            continue
        twin = PRESETS["agent0" if name == "default" else f"{name}_agent0"]
        assert twin.mode == "agent0" and twin.rl_reward == "agent0_executor"
        assert twin.run_dir == cfg.run_dir + "_agent0"
        assert twin.solver_attempts == (3 if name.startswith("fast") else 4)
        assert (twin.agent0_p_low, twin.agent0_p_high, twin.agent0_reward) == (0.3, 0.8, "paper")
        changed = {k for k, v in twin.to_dict().items() if v != cfg.to_dict()[k]}
        assert changed <= {"mode", "run_dir", "rl_reward", "solver_attempts"}
    assert preset_name("tiny", "scripted", False, "agent0") == "agent0"
    assert preset_name("pretrained", "learned", True, "agent0") == "fast_smollm2_learned_agent0"
    assert set(AGENT0_TITLES) == {(m, p) for m in ("tiny", "pretrained") for p in ("scripted", "learned")}


def test_a_bad_mode_or_band_is_a_config_error_naming_the_choices():
    with pytest.raises(ConfigError, match="'drzero', 'agent0'"):
        DemoConfig(mode="agent1")
    with pytest.raises(ConfigError, match=r"agent0_p_low, agent0_p_high: 0\.9, 0\.8"):
        DemoConfig(agent0_p_low=0.9)
    with pytest.raises(ConfigError, match="the mode drzero or agent0"):
        preset_name("tiny", "scripted", mode="zero")
    assert DemoConfig().with_overrides(["mode=agent0", "agent0_p_high=0.7"]).agent0_p_high == 0.7


def test_the_demo_sizes_map_onto_agent0_config(tmp_path):
    from workbench.demo import ScriptedProposer, Stages, TinyModel
    from workbench.demo.modes import evolve_config
    from workbench.evolve import Agent0Config, DrZeroConfig

    cfg = DemoConfig.preset("agent0", run_dir=str(tmp_path / "run"), world_size="tiny", agent0_p_low=0.25)
    st = Stages(cfg, print, fresh=True, model=TinyModel(), proposer=ScriptedProposer())
    config = evolve_config(st, proposer_group_size=2)
    assert isinstance(config, Agent0Config)
    assert (config.solver_attempts, config.solver_group_size, config.proposer_group_size) == (4, 4, 2)
    assert (config.p_low, config.p_high, config.solver_estimator, config.proposer_estimator) == (
        0.25,
        0.8,
        "adpo",
        "grpo",
    )
    assert config.proposer_spec().name == "agent0_paper" and config.solver_spec().name == "agent0_executor"
    drzero = st.drzero_config()
    assert config.solver_agent == drzero.solver_agent and config.prompts_per_iteration == cfg.proposer_prompts
    st.cfg = DemoConfig.preset("default", run_dir=str(tmp_path / "run"), world_size="tiny")
    assert isinstance(evolve_config(st), DrZeroConfig)
    st.cfg = cfg.with_overrides(["agent0_reward=code"])
    assert evolve_config(st).proposer_spec().name == "agent0"


ROW = {
    "iteration": 0,
    "qa_size": 2,
    "evolve/proposer_reward": 0.4,
    "evolve/valid_rate": 1.0,
    "evolve/in_band_rate": 0.5,
    "evolve/repetition": 0.25,
    "evolve/question_mix/hop1": 0.75,
    "evolve/proposer_reward/hop1": 0.5,
    "evolve/self_consistency/hop1": 0.6,
    "evolve/uncertainty/hop1": 0.8,
    "evolve/solver_pass_rate/hop1": 0.5,
    "evolve/question_mix/hop2": 0.25,
    "evolve/proposer_reward/hop2": 0.1,
    "solver_update": {"global_step": 5},
}


def test_agent0_lines_and_summary_per_iteration_and_hop():
    lines = agent0_lines([ROW, {**ROW, "iteration": 1, "solver_update": {"skipped": "empty QA set"}}])
    assert lines[0] == (
        "  iteration 0: 2 questions in the QA set (in the band: 50% of the answered valid ones), "
        "curriculum reward 0.400, 5 ADPO steps"
    )
    assert lines[1] == (
        "    hop 1: mix 75.0%  curriculum reward 0.500  self-consistency 0.60  uncertainty 0.80  solver pass rate 50.0%"
    )
    assert lines[2].startswith("    hop 2: mix 25.0%  curriculum reward 0.100  self-consistency 0.00")
    assert lines[3].endswith("no ADPO step (empty QA set)")
    [summary] = agent0_summary([ROW])
    assert summary["curriculum_reward"] == 0.4 and summary["in_band_rate"] == 0.5
    assert summary["per_hop"]["1"] == {
        "proposer_reward": 0.5,
        "self_consistency": 0.6,
        "uncertainty": 0.8,
        "solver_pass_rate": 0.5,
        "question_mix": 0.75,
    }


@pytest.mark.slow
@pytest.mark.timeout(1800)  # every stage of the demo with real kernels: minutes on a busy machine
def test_agent0_smoke_run_on_the_tiny_model(tmp_path, torch_threads, monkeypatch):
    """`--mode agent0 --fast` (6 proposer prompts, 4 held-out questions): the Agent0 specs score the proposer and
    the solver's attempts, the QA set holds exactly the valid in-band questions, labelled by majority vote, the
    solver's ADPO update runs on them, and summary.json and the EvolutionDashboard's table carry the per-iteration
    figures.

    The smoke run's SFT (17 steps) leaves a solver that never answers, so every p would be 0 and the band empty:
    here the attempts that score the questions come from the scripted solver with sampled noise (answers that
    disagree now and then), while the tiny model itself still takes the ADPO step on the in-band questions."""
    from workbench.demo import Stages, rl, run_demo
    from workbench.evolve import majority_vote, sampling_world_solver
    from workbench.policies import TokenizerCodec
    from workbench.store import Store
    from workbench.widgets._attempts import proposal_valid
    from workbench.widgets.evolution import evolution_table

    live_policy = Stages.policy

    def policy(self: Stages, model: object, tok: object, name: str) -> object:
        if name == "demo-solver":  # the solver's attempts in QA generation
            return sampling_world_solver(noise=0.5, seed=self.cfg.seed, codec=TokenizerCodec(tok))
        return live_policy(self, model, tok, name)

    steps: list[tuple[str, int]] = []  # each RL update's estimator and its questions

    def role_train_config(cfg: DemoConfig, req: object, **role: object) -> object:
        steps.append((req.estimator, len(req.tasks)))  # type: ignore[attr-defined]
        return live_config(cfg, req, **role)

    live_config = rl.role_train_config
    monkeypatch.setattr(Stages, "policy", policy)
    monkeypatch.setattr(rl, "role_train_config", role_train_config)
    run = tmp_path / "agent0"
    lines: list[str] = []
    cfg = DemoConfig.preset(
        "fast_agent0", run_dir=str(run), torch_threads=torch_threads, eval_tasks=4, proposer_prompts=6
    )
    run_demo(cfg, out=lines.append)
    specs = json.loads((run / "evolve" / "reward_specs.json").read_text())
    assert (specs["proposer"]["name"], specs["solver"]["name"]) == ("agent0_paper", "agent0_executor")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["config"]["mode"] == "agent0"
    [row] = summary["evolution"]
    for key in ("evolve/proposer_reward", "evolve/valid_rate", "evolve/solver_pass_rate", "evolve/in_band_rate"):
        assert key in row, key
    [it] = summary["agent0_per_iteration"]
    assert it["qa_size"] == row["qa_size"] and it["per_hop"]

    qa = [json.loads(line) for line in (run / "evolve" / "iter_0" / "qa.jsonl").read_text().splitlines()]
    with Store.open_readonly(run / "evolve") as store:
        proposers = list(store.iter_trajectories(role="proposer"))
        frame = store.query(role="proposer")
        assert set(frame["reward_spec"]) == {"agent0_paper"}
        assert set(store.query(role="solver")["reward_spec"].dropna()) >= {"agent0_executor"}
        table = evolution_table(store)
    assert not table.empty and table[["proposer_reward", "valid_share"]].notna().all().all()
    assert table["solver_pass_rate"].notna().any()
    votes = {t.id: majority_vote(t.metadata.get("executor_answers", [])) for t in proposers}
    valid = {t.id for t in proposers if proposal_valid(t)}  # a question and an answer not given away in it
    in_band = {i for i, v in votes.items() if v.answer is not None and 0.3 <= v.p_valid <= 0.8}
    assert {task["metadata"]["origin"] for task in qa} == valid & in_band and row["qa_size"] == len(qa)
    assert any(votes[i].n for i in valid)  # the solver attempted the valid questions
    for task in qa:
        meta = task["metadata"]
        vote = votes[meta["origin"]]
        assert meta["pseudo_label"] and task["golden_answers"] == [vote.answer]  # majority vote
        assert 0.3 <= meta["self_consistency"] == vote.p_valid <= 0.8  # the band
    assert len(qa) >= cfg.rl_questions_per_step and row["solver_update"]["global_step"] == 1, row["solver_update"]
    assert steps == [("adpo", len(qa))]  # the executor's update: ADPO on the in-band questions
    assert f"  iteration 0: 1 ADPO steps on {len(qa)} questions" in lines
    assert any("curriculum reward" in line for line in lines)


def test_a_learned_proposers_grpo_step_takes_groups_of_one_prompt_and_says_when_it_is_short():
    """Agent0's curriculum update (GRPO) groups episodes of one prompt: prompts of any hop counts fill a step, which
    needs proposer_rl_batch / proposer_hop_group of them; Dr. Zero's HRPO still needs whole hop groups."""
    from types import SimpleNamespace

    from workbench.demo.rl import proposer_train_fn
    from workbench.trajectory import Task

    tasks = [Task(str(i), "q", [], {"hops": i + 1}) for i in range(3)]  # three prompts, three hop counts
    cfg = DemoConfig(proposer_rl_batch=4, proposer_hop_group=2, proposer_rl_micro_batch=3)  # a micro-batch to refuse
    train_fn = proposer_train_fn(None, None, cfg, solver_fn=lambda r: None, on_step=lambda line: None)

    def request(estimator: str, n: int) -> SimpleNamespace:
        return SimpleNamespace(role="proposer", tasks=tasks[:n], episodes=None, estimator=estimator)

    assert train_fn(request("grpo", 1)) == {"skipped": "only 1 prompts, fewer than 2 groups of 2 rollouts"}
    assert train_fn(request("hrpo", 3)) == {"skipped": "only 0 prompts in hop groups of 2"}
    with pytest.raises(ConfigError, match="proposer_rl_micro_batch=3"):  # GRPO took the 3 prompts to a step
        train_fn(request("grpo", 3))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # both roles' stages with real kernels: minutes on a busy machine
def test_agent0_learned_proposer_smoke_run(tmp_path, torch_threads):
    """`--mode agent0 --proposer learned --fast`: the proposer's teacher writes on Agent0's prompt, the proposer
    takes one GRPO step on the curriculum reward (its batches' figures kept per hop), and summary.json carries
    Agent0's per-iteration figures in place of Dr. Zero's proposer figures."""
    from workbench.demo import LearnedProposer, run_demo
    from workbench.store import Store

    run = tmp_path / "learned_agent0"
    lines: list[str] = []
    cfg = DemoConfig.preset("fast_learned_agent0", run_dir=str(run), torch_threads=torch_threads)
    run_demo(cfg, out=lines.append, proposer=LearnedProposer())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["proposer"] == "learned" and "proposer_per_iteration" not in summary
    [row] = summary["evolution"]
    update = row["proposer_update"]
    assert update["global_step"] == 1, update
    assert all({"reward", "uncertainty", "spread"} <= set(v) for batch in update["rollouts"] for v in batch.values())
    [it] = summary["agent0_per_iteration"]
    assert it["proposer_update"] == update["rollouts"]
    [teacher_dir] = [p for p in (run / "cache").iterdir() if p.name.startswith("proposer-teacher-")]
    with Store.open_readonly(teacher_dir) as store:
        assert all(t.task.metadata["mode"] == "agent0" for t in store.iter_trajectories())
    assert any("GRPO steps on the proposer" in line for line in lines)
    assert any("proposer GRPO update, curriculum reward" in line for line in lines)
