"""The contracts module: the classes workbench ships satisfy its protocols (under mypy and at
runtime), and its closed sets name every value the code writes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from mypy_check import run_mypy
from source_tree import parse_file

from workbench import contracts, trajectory
from workbench.contracts import (
    EPISODE_KINDS,
    ROLES,
    TERMINATIONS,
    Curriculum,
    EpisodeRunner,
    Scorer,
    TrajectoryStore,
)

ROOT = Path(__file__).resolve().parents[1]

RUNNERS = {
    "SearchR1Episodes": "workbench.train.episodes",
    "NBAgentEpisodes": "workbench.train.run",
    "ProposerEpisodes": "workbench.evolve.phases",
    "SolverEpisodes": "workbench.evolve.phases",
    "RecordedEpisodes": "workbench.demo.rl",
}


def string_values(keyword: str, attribute: str) -> dict[str, list[str]]:
    """Every string literal given as `keyword=` or assigned to `.attribute` in workbench/, with where."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        for node in ast.walk(parse_file(path)):
            values: list[ast.expr] = []
            if isinstance(node, ast.keyword) and node.arg == keyword:
                values = [node.value]
            elif isinstance(node, ast.Assign):
                for target, value in _pairs(node):
                    if isinstance(target, ast.Attribute) and target.attr == attribute:
                        values.append(value)
            for value in values:
                for const in _results(value):
                    if isinstance(const.value, str) and const.value:
                        found.setdefault(const.value, []).append(f"{path.relative_to(ROOT)}:{const.lineno}")
    return found


def _results(expr: ast.expr) -> list[ast.Constant]:
    """The constants `expr` may evaluate to: `"a"`, `"a" if c else "b"`, `x or "a"`."""
    if isinstance(expr, ast.Constant):
        return [expr]
    if isinstance(expr, ast.IfExp):
        return _results(expr.body) + _results(expr.orelse)
    if isinstance(expr, ast.BoolOp):
        return [c for v in expr.values for c in _results(v)]
    return []


def _pairs(node: ast.Assign) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of `a = v` and `a, b = v, w`."""
    out: list[tuple[ast.expr, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            out.extend(zip(target.elts, node.value.elts, strict=False))
        else:
            out.append((target, node.value))
    return out


def test_every_termination_the_code_writes_is_a_termination():
    written = string_values("termination", "termination")
    assert {"submitted", "max_steps", "error", "worker_died"} <= set(written)  # the walk finds them
    unknown = {value: where for value, where in written.items() if value not in TERMINATIONS}
    assert not unknown, f"add these to workbench.trajectory.Termination or fix them: {unknown}"


def test_every_role_the_code_gives_an_episode_is_a_role():
    written = string_values("role", "role")
    assert {"solver", "proposer", "eval", "synthesizer"} <= set(written)
    unknown = {value: where for value, where in written.items() if value not in ROLES}
    assert not unknown, f"add these to workbench.contracts.Role or fix them: {unknown}"


def test_episode_kinds_are_the_training_configs():
    from workbench.train.config import EPISODE_KINDS as CONFIG_KINDS

    assert tuple(CONFIG_KINDS) == EPISODE_KINDS == ("search_r1", "nbagent")


def test_the_old_homes_still_export_the_moved_protocols():
    from workbench.agent.recorder import Scorer as RecorderScorer
    from workbench.agent.recorder import TrajectoryStore as RecorderStore

    assert RecorderScorer is Scorer and RecorderStore is TrajectoryStore
    assert contracts.Termination is trajectory.Termination and contracts.TERMINATIONS is trajectory.TERMINATIONS


def test_shipped_classes_meet_the_protocols_at_runtime(tmp_path):
    from workbench.agent.config import AgentConfig
    from workbench.policies import ScriptedPolicy
    from workbench.rewards import RewardSpec
    from workbench.search.simulated import SimulatedSearch
    from workbench.store import Store
    from workbench.train.episodes import SearchR1Episodes
    from workbench.train.run import NBAgentEpisodes

    simulator = SimulatedSearch(ScriptedPolicy(lambda text, turn: "doc"), total_steps=10)
    assert isinstance(simulator, Curriculum)
    assert SearchR1Episodes(simulator).curricula == [simulator]
    with Store(tmp_path / "store") as store:
        assert isinstance(store, TrajectoryStore)
    assert isinstance(RewardSpec.preset("l0"), Scorer)
    for runner in (SearchR1Episodes(simulator), NBAgentEpisodes(agent_config=AgentConfig())):
        assert isinstance(runner, EpisodeRunner)
    assert not isinstance(object(), Curriculum) and not isinstance(object(), TrajectoryStore)


@pytest.mark.slow  # mypy reads torch's and transformers' stubs: minutes with a cold cache
@pytest.mark.xdist_group("mypy")  # one worker: the mypy runs share a cache
def test_shipped_classes_meet_the_protocols_under_mypy(tmp_path):
    lines = [
        "from workbench.contracts import Curriculum, EpisodeRunner, Scorer, TrajectoryStore",
        "from workbench.policies.base import Policy",
        "from workbench.rewards.spec import RewardSpec",
        "from workbench.search.simulated import SimulatedSearch",
        "from workbench.store import Store",
        *(f"from {module} import {cls}" for cls, module in RUNNERS.items()),
        "",
        "",
        f"def runners({', '.join(f'r{i}: {cls}' for i, cls in enumerate(RUNNERS))}) -> list[EpisodeRunner[Policy]]:",
        f"    return [{', '.join(f'r{i}' for i in range(len(RUNNERS)))}]",
        "",
        "",
        "def others(s: Store, r: RewardSpec, c: SimulatedSearch) -> tuple[TrajectoryStore, Scorer, Curriculum]:",
        "    return s, r, c",
        "",
        "",
        "class OldRunner:  # the control: the old (tasks, policy) -> list signature of no type",
        "    async def __call__(self, tasks: list[int], policy: Policy) -> list[str]:",
        "        return []",
        "",
        "",
        "def control(r: OldRunner) -> EpisodeRunner[Policy]:",
        "    return r",
        "",
    ]
    path = tmp_path / "contracts_check.py"
    path.write_text("\n".join(lines))
    status, report = run_mypy(path)
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert len(errors) == 1 and '"OldRunner"' in errors[0], report  # only the control fails
    assert status == 1
