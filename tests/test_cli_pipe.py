"""`workbench show RUN ID | head`: the command stops quietly when its reader goes away."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workbench.store import Store
from workbench.trajectory import Step, Task, Trajectory

PIPE_BUFFER = 64 * 1024  # Linux's default pipe capacity: more output than this blocks the writer on its reader


def _long_run(run_dir: Path) -> str:
    """A run holding one trajectory whose full text is several pipe buffers long."""
    traj = Trajectory(task=Task(id="t0", question="Who founded the museum?", golden_answers=["Ada"]), run_id="r")
    for s in range(20):
        traj.steps.append(Step(index=s, raw="x", think="t", code="print(1)", observation_text=f"line {s}\n" * 4000))
    with Store(run_dir) as store:
        store.write_many([traj])
    return traj.id


def _workbench(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _read_a_little_then_close(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(100)
    assert first, "the command printed nothing before the pipe closed"
    proc.stdout.close()  # `head` has what it wants and exits
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    return proc.wait(timeout=60), stderr


def test_show_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    traj_id = _long_run(tmp_path / "run")
    proc = _workbench("show", str(tmp_path / "run"), traj_id, "--full")
    code, stderr = _read_a_little_then_close(proc)
    assert stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" at interpreter exit
    assert code == 141  # what a shell shows for a writer stopped by SIGPIPE, like `cat big | head`


def test_full_output_still_arrives_when_the_reader_stays(tmp_path: Path) -> None:
    traj_id = _long_run(tmp_path / "run")
    proc = _workbench("show", str(tmp_path / "run"), traj_id, "--full")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == b""
    assert out.count(b"line 19\n") == 4000 and len(out) > 4 * PIPE_BUFFER


WORKBENCH = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


@pytest.mark.parametrize(
    "argv",
    [
        [*WORKBENCH, "--help"],
        [*WORKBENCH, "show", "--help"],
        [sys.executable, "-m", "workbench.demo", "--help"],
        [sys.executable, "-m", "workbench.demo", "--help-config"],
    ],
    ids=["workbench", "workbench-show", "demo", "demo-config"],
)
def test_help_into_a_closed_pipe_exits_quietly(argv: list[str]) -> None:
    """Closing the read end before the child starts writing makes its first write meet the broken pipe every
    time. argparse swallows the OSError of printing help and exits 0; main() must keep stderr clean either way."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 141)
    assert stderr == ""
