"""What keeps two runs of the demo alike: teacher data in task order whatever order episodes finished in,
and one arithmetic (ATen / oneDNN code path) chosen before torch loads."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.demo.data import in_task_order
from workbench.store import Store
from workbench.trajectory import Task, Trajectory


def _tasks(n: int) -> list[Task]:
    return [Task(f"t{i}", f"question {i}?", [f"answer {i}"]) for i in range(n)]


def test_teacher_read_back_from_a_store_comes_in_task_order(tmp_path: Path) -> None:
    """With more tasks than kernels, an episode starts when an earlier one finishes, so start times follow
    kernel timing, and a store yields trajectories by start time. Read back from the cache, the teacher's
    trajectories must come in the order a fresh run returns them (the tasks' order), or SFT on a cached
    teacher trains on another sequence of examples."""
    tasks = _tasks(12)
    started = [Trajectory(task=t, run_id="teacher", final_answer=t.golden_answers[0]) for t in tasks]
    random.Random(3).shuffle(started)
    for i, traj in enumerate(started):
        traj.started_at = 1_700_000_000.0 + i
    with Store(tmp_path / "teacher") as store:
        store.write_many(started)
    with Store.open_readonly(tmp_path / "teacher") as store:
        read_back = list(store.iter_trajectories())
    assert [t.task.id for t in read_back] == [t.task.id for t in started]  # the start order, as stored
    assert [t.task.id for t in in_task_order(read_back, tasks)] == [t.id for t in tasks]


def test_in_task_order_refuses_a_trajectory_of_another_task() -> None:
    tasks = _tasks(2)
    stray = Trajectory(task=Task("other", "?", ["x"]))
    with pytest.raises(ValueError, match="other"):
        in_task_order([stray], tasks)


def _capability(env: dict[str, str]) -> str:
    code = (
        "import sys; import workbench.demo.__main__ as m; assert 'torch' not in sys.modules, 'torch loaded too early'; "
        "m.pin_arithmetic(); import torch; print(torch.backends.cpu.get_cpu_capability())"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_demo_entry_pins_the_vector_code_path_before_torch_loads() -> None:
    """ATen reads ATEN_CPU_CAPABILITY when torch loads: the demo's entry sets "avx2" before that (an AVX-512
    host then runs the AVX2 kernels too), and a value the user set wins (here "default": no vector kernels)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")}
    assert _capability(env) == "AVX2"
    assert _capability({**env, "ATEN_CPU_CAPABILITY": "default"}) == "DEFAULT"
