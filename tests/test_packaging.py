"""The repo's own files describe one environment: environment.yml follows pyproject.toml."""

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_environment_yml_matches_pyproject_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = env["dependencies"]
    assert "python=3.11" in conda
    pip_deps = next(d["pip"] for d in conda if isinstance(d, dict))
    project = _pyproject()
    assert sorted(pip_deps) == sorted(project["dependencies"] + project["optional-dependencies"]["dev"]), (
        "environment.yml is out of step: run `python scripts/gen_environment_yml.py`")


def test_torch_is_pinned_to_an_exact_cpu_installable_version():
    deps = _pyproject()["dependencies"]
    torch = [d for d in deps if d.startswith("torch")]
    assert torch == ["torch==2.13.0"], "a loose torch pin pulls a multi-GB CUDA build on CPU machines"


def test_gpu_extra_keeps_vllm_inside_trl_range():
    gpu = _pyproject()["optional-dependencies"]["gpu"]
    vllm = next(d for d in gpu if d.startswith("vllm"))
    assert vllm == "vllm>=0.22.0,<=0.31.0"  # TRL 1.16's supported range
    assert any(d.startswith("faiss-gpu") for d in gpu)


def test_trl_pinned_exactly():
    assert "trl==1.16.0" in _pyproject()["dependencies"]
