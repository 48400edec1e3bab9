"""The package as users install it: the wheel and sdist build offline, the wheel installs with --no-deps
into a fresh virtualenv outside the repository (reusing this environment's packages through a `.pth`
file), and from a temp directory it imports from there, prints its version, runs a sandboxed cell under
each shipped profile, plays `workbench run` with the scripted policy, and installs the kernelspec and
starts a kernel from it. Nothing here reads the repository at run time: the shipped profiles and
kernelspec come from the wheel (`workbench.shipped`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "workbench", "sandbox", "kernels")
SHIPPED_PROFILES = sorted(p.stem for p in (ROOT / "sandbox" / "profiles").glob("*.toml"))


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The wheel and sdist, built by setuptools' PEP 517 hooks from a copy of the sources (offline)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, src / name)
    for hook in ("build_sdist", "build_wheel"):  # one process each, as a build frontend calls them
        _run([sys.executable, "-c", f"import sys; from setuptools import build_meta as b; b.{hook}(sys.argv[1])",
              str(out)], cwd=src)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel installed (--no-deps) and this environment's packages reused."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(where)], cwd=where.parent)
    [wheel] = dist.glob("*.whl")
    _run([sys.executable, "-m", "pip", "--python", str(where / "bin" / "python"), "install", "-q", "--no-deps",
          str(wheel)], cwd=where.parent)  # fmt: skip
    [site_packages] = (where / "lib").glob("python3*/site-packages")
    ours = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site_packages / "reused-packages.pth").write_text(f"{ours}\n")  # after the wheel: the wheel wins
    return where


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKBENCH_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, "HOME": str(home), "HF_HUB_OFFLINE": "1", "JUPYTER_DATA_DIR": str(home / "jupyter")}


def test_the_wheel_and_sdist_carry_the_shipped_folders(dist):
    [wheel], [sdist] = dist.glob("*.whl"), dist.glob("*.tar.gz")
    assert wheel.name.startswith("workbench_rl-") and sdist.name.startswith("workbench_rl-")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    for name in SHIPPED_PROFILES:
        assert f"workbench/_shipped/sandbox/profiles/{name}.toml" in in_wheel
    assert "workbench/_shipped/kernels/workbench-sandboxed/kernel.json" in in_wheel
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert any(n.endswith("sandbox/profiles/default.toml") for n in names)
    assert any(n.endswith("kernels/workbench-sandboxed/kernel.json") for n in names)


def test_the_installed_package_runs_the_quick_start_from_a_temp_dir(venv, tmp_path):
    py, env = str(venv / "bin" / "python"), _env(tmp_path)
    where = _run([py, "-c", "import workbench, workbench.shipped as s; print(workbench.__file__); print(s.INSTALLED)"],
                 cwd=tmp_path, env=env).split()  # fmt: skip
    assert where[0].startswith(str(venv)) and Path(where[1]).is_dir()
    import workbench

    assert _run([str(venv / "bin" / "workbench"), "--version"], cwd=tmp_path, env=env).strip() == (
        f"workbench {workbench.__version__}"
    )

    cells = (
        "import workbench as wb\n"
        "from workbench.sandbox import profile_names\n"
        "for name in profile_names():\n"
        "    with wb.Kernel(profile=name) as k:\n"
        "        print(name, k.execute('21 * 2').text.strip())\n"
    )
    out = _run([py, "-c", cells], cwd=tmp_path, env=env)
    assert out.split("\n")[:-1] == [f"{name} 42" for name in SHIPPED_PROFILES]

    tasks = tmp_path / "world"
    _run([py, "-c", f"from workbench.worlds import make_world; make_world(seed=0, size='small').save({str(tasks)!r})"],
         cwd=tmp_path, env=env)  # fmt: skip
    run = _run([str(venv / "bin" / "workbench"), "run", "--tasks", str(tasks / "qa_test.jsonl"), "--policy",
                "scripted", "--limit", "2", "--out", str(tmp_path / "first")], cwd=tmp_path, env=env)  # fmt: skip
    assert "mean reward 1.000" in run


def test_the_installed_kernelspec_starts_a_sandboxed_kernel(venv, tmp_path):
    py, env = str(venv / "bin" / "python"), _env(tmp_path)
    prefix = tmp_path / "prefix"
    _run([str(venv / "bin" / "workbench"), "kernels", "install", "--prefix", str(prefix)], cwd=tmp_path, env=env)
    [spec] = prefix.glob("share/jupyter/kernels/*/kernel.json")
    assert json.loads(spec.read_text())["argv"][0] == py
    client = (
        "import sys\n"
        "from jupyter_client.manager import start_new_kernel\n"
        f"km, kc = start_new_kernel(kernel_name={spec.parent.name!r}, startup_timeout=120)\n"
        "try:\n"
        "    seen = []\n"
        "    kc.execute_interactive('import os; print(os.environ.get(\"WORKBENCH_SANDBOX\"), 6 * 7)', timeout=60,\n"
        "                           output_hook=lambda m: seen.append(m['content'].get('text', '')))\n"
        "    print(''.join(seen).strip())\n"
        "finally:\n"
        "    kc.stop_channels(); km.shutdown_kernel(now=True)\n"
    )
    env["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")  # where JupyterLab would find it
    assert _run([py, "-c", client], cwd=tmp_path, env=env).strip().splitlines()[-1] == "1 42"
