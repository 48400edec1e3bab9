"""`workbench serve-env` in its own process: OpenEnv's client resets it onto one of `--tasks` by seed, steps
it to a scored answer, and Ctrl-C stops it cleanly."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.envs.openenv import NBAgentAction
from workbench.envs.server import NBAgentClient


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_serve_env_serves_tasks_to_an_openenv_client(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "a", "question": "Capital of France?", "answer": "Paris"},
        {"id": "b", "question": "2 + 2?", "answer": "4"},
    ]
    tasks.write_text("".join(json.dumps(row) + "\n" for row in rows))
    port = _free_port()
    argv = [sys.executable, "-m", "workbench.cli", "serve-env", "--port", str(port), "--tasks", str(tasks)]
    argv += ["--reward", "em", "--max-sessions", "2", "--max-steps", "3"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"on http://127.0.0.1:{port}" in banner, banner + proc.stderr.read() if proc.stderr else banner
        with NBAgentClient(f"http://127.0.0.1:{port}").sync() as client:
            reset = client.reset(seed=1)
            assert reset.observation.task == "2 + 2?"
            done = client.step(NBAgentAction(code="submit_final_answer(str(2 + 2))"))
            assert (done.done, done.reward, done.observation.rewards) == (True, 1.0, {"em": 1.0, "total": 1.0})
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=180)  # closing the kernel pool takes a while on loaded cores
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"serve-env did not stop on Ctrl-C:\n{err[-3000:]}") from None
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
