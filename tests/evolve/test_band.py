"""The band (`workbench.evolve.band`): per hop count, the share of valid questions a solver answers right in some
but not all of n attempts, played through real solver episodes in real kernels.

The scripted solver below answers question i right in its first `RIGHT[i]` attempts and wrong after, so k is
known. With n = 5, worked by hand (difficulty (n − k)/(n − 1) = (5 − k)/4 when 0 < k < 5, else 0):

    question  hops  valid  k  in band  difficulty
    q0        2     yes    5  no       0
    q1        2     yes    2  yes      0.75
    q2        2     yes    0  no       0
    q3        3     yes    1  yes      1.0
    q4        3     yes    4  yes      0.25
    q5        3     no     -  -        -      (no gold answer: counted, never attempted)

    hops 2: 3 questions, 3 valid, 1 in band: share 1/3; difficulty (0 + 0.75 + 0)/3 = 0.25; pass 7/15
    hops 3: 3 questions, 2 valid, 2 in band: share 1;   difficulty (1 + 0.25)/2 = 0.625;  pass 5/10
    all:    6 questions, 5 valid, 3 in band: share 3/5; difficulty 2/5 = 0.4;            pass 12/25

Wilson's 95% interval of 3 of 5 (z = 1.96): centre (0.6 + 1.96²/10)/(1 + 1.96²/5) = 0.98416/1.76832 = 0.5566,
half-width 1.96·sqrt(0.6·0.4/5 + 1.96²/100)/1.76832 = 0.3258, so [0.231, 0.882] — printed as [23%, 88%].
"""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest

from workbench.agent.config import AgentConfig
from workbench.errors import ConfigError
from workbench.evolve.band import applied_sampling, band_rows, measure_band
from workbench.evolve.proposer import solver_tools
from workbench.policies import ScriptedPolicy
from workbench.policies.sampling import SamplingDefaults
from workbench.trajectory import Task

N = 5
RIGHT = [5, 2, 0, 1, 4, 0]
HOPS = [2, 2, 2, 3, 3, 3]


def questions() -> list[Task]:
    out = []
    for i, hops in enumerate(HOPS):
        gold = [] if i == 5 else [f"answer{i}"]
        out.append(Task(id=f"q{i}", question=f"What is the marker of item Q{i}X?", golden_answers=gold,
                        metadata={"hops": hops}))  # fmt: skip
    return out


def counting_solver() -> tuple[ScriptedPolicy, Counter[int]]:
    """Answers question i right in its first RIGHT[i] attempts (one turn each), wrong after."""
    seen: Counter[int] = Counter()
    lock = threading.Lock()

    def turn(context: str, _turn: int) -> str:
        i = int(re.findall(r"item Q(\d+)X", context)[-1])
        with lock:
            seen[i] += 1
            right = seen[i] <= RIGHT[i]
        answer = f"answer{i}" if right else "wrong"
        return f"<think>I know it.</think>\n<code>\nsubmit_final_answer({answer!r})\n</code>"

    return ScriptedPolicy(turn, name="counting-solver"), seen


def test_band_per_hop_matches_the_hand_worked_figures(retriever, tmp_path):
    policy, seen = counting_solver()
    config = AgentConfig(max_steps=2, temperature=1.0, top_p=0.95, seed=0)
    report = measure_band(
        questions(), policy, n=N, solver_config=config, tools=solver_tools(retriever), store_dir=tmp_path / "band"
    )
    assert dict(seen) == {i: N for i in range(5)}  # q5 (no gold answer) is never attempted
    assert [q["k"] for q in report.questions] == [5, 2, 0, 1, 4, 0]
    two, three, every = report.rows
    assert (two.hops, two.questions, two.valid, two.in_band) == ("2", 3, 3, 1)
    assert (three.hops, three.questions, three.valid, three.in_band) == ("3", 3, 2, 2)
    assert (every.hops, every.questions, every.valid, every.in_band) == ("all", 6, 5, 3)
    assert two.share == pytest.approx(1 / 3) and three.share == 1.0 and every.share == pytest.approx(0.6)
    assert two.mean_difficulty == pytest.approx(0.25)
    assert three.mean_difficulty == pytest.approx(0.625)
    assert every.mean_difficulty == pytest.approx(0.4)
    assert (two.pass_rate, three.pass_rate, every.pass_rate) == pytest.approx((7 / 15, 0.5, 12 / 25))
    assert (every.low, every.high) == pytest.approx((0.231, 0.882), abs=1e-3)
    assert report.line() == "band share: 60% [23%, 88%] (5 questions, n=5)"
    assert report.sampling["temperature"] == {"value": 1.0, "source": "the episode's AgentConfig"}
    assert report.sampling["top_p"]["value"] == 0.95
    # every attempt is a recorded solver episode, as in self-evolution
    from workbench.store import Store

    with Store.open_readonly(tmp_path / "band") as store:
        stored = [t for t in store.iter_trajectories() if t.role == "solver"]
    assert len(stored) == 5 * N
    assert sum(t.reward == 1.0 for t in stored) == 12


def test_sampling_names_where_each_value_comes_from():
    policy = ScriptedPolicy(lambda _c, _t: "")
    unset = applied_sampling(policy, AgentConfig())
    assert unset["temperature"]["value"] == 1.0 and unset["temperature"]["source"].startswith("workbench's default")
    assert unset["max_new_tokens"]["source"] == "AgentConfig's default"
    policy.sampling_defaults = SamplingDefaults(temperature=0.2, top_p=0.9)  # type: ignore[attr-defined]
    card = applied_sampling(policy, AgentConfig(max_new_tokens=448))
    assert card["temperature"] == {"value": 0.2, "source": "the model card (generation_config.json)"}
    assert card["max_new_tokens"] == {"value": 448, "source": "the episode's AgentConfig"}
    explicit = applied_sampling(policy, AgentConfig(temperature=1.0), episode_source="preset smollm2")
    assert explicit["temperature"] == {"value": 1.0, "source": "preset smollm2"}
    assert explicit["top_p"]["value"] == 0.9  # left unset: still the model card's


def test_rows_without_valid_questions_and_bad_input(tmp_path):
    rows = band_rows([{"hops": 4, "valid": False, "k": 0}], N)
    assert (rows[0].valid, rows[0].share, rows[0].low, rows[0].high) == (0, 0.0, 0.0, 1.0)
    policy = ScriptedPolicy(lambda _c, _t: "")
    with pytest.raises(ConfigError, match="n >= 2"):
        measure_band(questions(), policy, n=1, solver_config=AgentConfig(), tools={}, store_dir=tmp_path)
    with pytest.raises(ConfigError, match="hops"):
        measure_band([Task("a", "q?", ["x"])], policy, solver_config=AgentConfig(), tools={}, store_dir=tmp_path)
    with pytest.raises(ConfigError, match="one of them"):
        measure_band(questions(), policy, solver_config=AgentConfig(), store_dir=tmp_path)


@pytest.mark.slow
def test_band_bench_smoke_prints_the_line_scripts_parse(tmp_path):
    """`bench_coevolution.py --band --smoke`: the toy model's stages (tokenizer, tiny Qwen2, teacher, SFT), 3
    scripted-proposer questions (hops 2, 3, 4), 2 attempts each, ending in `band share: X% [LO, HI] (N questions,
    n=2)` with LO <= X <= HI; its figures recorded as smoke, its attempts in the run's store."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from workbench.figures import RESULTS_ENV, read_figures

    root = Path(__file__).resolve().parents[2]
    results = tmp_path / "results"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", RESULTS_ENV: str(results)}
    cmd = [sys.executable, str(root / "bench" / "bench_coevolution.py"), "--band", "--smoke", "--run-dir",
           str(tmp_path / "run")]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    last = proc.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"band share: (\d+)% \[(\d+)%, (\d+)%\] \((\d+) questions, n=2\)", last)
    assert match, last
    share, low, high, valid = map(int, match.groups())
    assert low <= share <= high and 1 <= valid <= 3
    assert "temperature" in proc.stdout and "rl_temperature" in proc.stdout  # where the sampling came from
    figures = read_figures(results)
    assert figures and all(f.mode == "smoke" for f in figures)
    assert any(f.name.startswith("band share, all hops") for f in figures)
    assert (tmp_path / "run" / "band" / "trajectories.sqlite").exists()
