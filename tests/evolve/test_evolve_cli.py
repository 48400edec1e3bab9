"""`workbench evolve CONFIG`: self-evolution from a shell, with the shipped example config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.evolve.experiment import EvolveExperiment

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "evolve.toml"


def _workbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def test_help_lists_evolve_and_help_config_lists_each_modes_fields(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "evolve" in capsys.readouterr().out
    assert main(["evolve", "--help-config"]) == 0
    text = capsys.readouterr().out
    assert "corpus" in text and "format_weight" in text and "DrZeroConfig" in text
    assert main(["evolve", "--help-config", "--mode", "agent0"]) == 0
    assert "p_low" in capsys.readouterr().out
    assert main(["evolve", str(EXAMPLE), "--help-config"]) == 0  # the file's mode
    assert "format_weight" in capsys.readouterr().out


def test_bad_configs_name_the_fix(tmp_path):
    with pytest.raises(ConfigError, match="mode 'alphazero'"):
        EvolveExperiment.load(EXAMPLE, mode="alphazero")
    with pytest.raises(ConfigError, match="prompts_per_iteration"):
        EvolveExperiment.load(EXAMPLE, prompts_per_iteration=0)
    with pytest.raises(ConfigError, match="set corpus"):
        EvolveExperiment(corpus="")
    with pytest.raises(ConfigError, match=r"unknown field\(s\) iteratoins"):
        EvolveExperiment.from_dict({"corpus": "c.jsonl", "iteratoins": 2})
    job = EvolveExperiment.load(EXAMPLE, **{"train.max_steps": 3, "iterations": 2, "solver": "scripted:default"})
    assert job.train == {"max_steps": 3} and job.evolve_config().iterations == 2 and job.solver == "scripted:default"
    with pytest.raises(ConfigError, match="nothing can be trained"):
        from workbench.evolve.experiment import run_experiment

        run_experiment(EvolveExperiment.load(EXAMPLE, **{"train.max_steps": 1}))
    assert main(["evolve"]) == 1  # no config: an error naming --help-config


@pytest.mark.slow
def test_the_example_config_runs_from_a_shell(tmp_path):
    from workbench.worlds import make_world

    make_world(seed=0, size="small").save(tmp_path / "runs" / "demo" / "world")  # where the example looks
    done = _workbench("evolve", str(EXAMPLE), "--set", "prompts_per_iteration=3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "evolve (drzero): proposer scripted:proposer" in done.stdout
    assert "iteration 0:" in done.stdout and "workbench show runs/evolve-example" in done.stdout
    run = tmp_path / "runs" / "evolve-example"
    qa = [json.loads(line) for line in (run / "iter_0" / "qa.jsonl").read_text().splitlines()]
    assert qa and all(row["golden_answers"] for row in qa)
    from workbench.store import Store

    with Store.open_readonly(run) as store:
        proposers = store.query(role="proposer")
        assert len(proposers) == 3 and proposers.reward.notna().all()
        assert len(store.children(proposers.id.iloc[0])) == 2


def test_old_job_names_still_resolve_with_a_deprecation_warning():
    import workbench.evolve.job as old
    from workbench.evolve.experiment import run_experiment

    with pytest.warns(DeprecationWarning, match="EvolveExperiment"):
        assert old.EvolveJob is EvolveExperiment
    with pytest.warns(DeprecationWarning, match="run_experiment"):
        assert old.run_job is run_experiment
    with pytest.raises(AttributeError):
        old.NoSuchName  # noqa: B018
