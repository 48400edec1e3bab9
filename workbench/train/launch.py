"""`launch(config)`: train in a spawned child process, so a crash never takes the notebook down.

    handle = launch(TrainConfig.load("train.toml"))
    for row in handle.stream():                 # metrics rows as they arrive, until the child exits
        print(row["step"], row.get("reward"))
    handle.status        # starting | running | finished | failed | stopped
    handle.stop()        # graceful (stop after the current step, save), then terminate, then kill
    handle.log_tail()    # the child's last log lines (the traceback when it failed)

The child writes `<output_dir>/status.json`, `metrics.jsonl` and `train.log`; the handle only
reads files, so it also works from another process or after a notebook restart.

What the caller registered (an estimator, reward, policy backend, tool set or env source defined in a
notebook cell, or under a script's `__main__` guard) reaches the child: `launch` carries the caller's
registrations by value (`workbench.registrations.carry`) and the child installs them before the config
resolves a name; `status.json` lists them under "registrations". One that cannot be copied (it holds a
lock or a socket) or rebuilt in the child is listed under "not_carried" with why, and the child's lookup
of its name fails with a `ConfigError` saying so: a run fails only for what it uses.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import time
import traceback
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from workbench.errors import TrainingError
from workbench.registrations import carry, install_carried, missing
from workbench.train.config import TrainConfig

STATUSES = ("starting", "running", "finished", "failed", "stopped")


def _write_status(out: Path, status: str, **extra: Any) -> None:
    tmp = out / "status.json.tmp"
    tmp.write_text(json.dumps({"status": status, "time": time.time(), "pid": os.getpid(), **extra}))
    os.replace(tmp, out / "status.json")


# torch.distributed rendezvous variables a parent may carry (TRL's colocated vLLM sets them in-process):
# the child trains alone, and reusing the parent's MASTER_PORT would fail with EADDRINUSE.
_RENDEZVOUS_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _child_main(config: dict[str, Any], registrations: bytes = b"") -> None:
    for name in _RENDEZVOUS_VARS:
        os.environ.pop(name, None)
    out = Path(config["output_dir"])
    log = open(out / "train.log", "a", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    try:
        installed = install_carried(registrations) if registrations else []
        if installed:
            print(f"the caller's registrations: {', '.join(installed)}", flush=True)
        for name, why in missing().items():
            print(f"not carried: the {name} registration: {why}", flush=True)
        carried = {"registrations": installed, "not_carried": missing()}
        _write_status(out, "running", **carried)
        from transformers import TrainerCallback

        from workbench.train.run import train

        stop_file = out / "STOP"

        class StopOnFile(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                if stop_file.exists():
                    control.should_training_stop = True
                    control.should_save = True

        summary = train(TrainConfig.from_dict(config), callbacks=[StopOnFile()])
        _write_status(out, "stopped" if stop_file.exists() else "finished", summary=summary, **carried)
    except BaseException as exc:
        traceback.print_exc()
        _write_status(out, "failed", error=f"{type(exc).__name__}: {exc}")
        log.flush()
        os._exit(1)
    log.flush()


class TrainingHandle:
    """A training run in a child process (see the module docstring)."""

    def __init__(self, process: BaseProcess, output_dir: Path) -> None:
        self.process = process
        self.output_dir = output_dir
        self._stopping = False

    def __repr__(self) -> str:
        return f"TrainingHandle({self.output_dir}, status={self.status}, pid={self.process.pid})"

    def _status_file(self) -> dict[str, Any]:
        try:
            status: dict[str, Any] = json.loads((self.output_dir / "status.json").read_text())
            return status
        except (OSError, ValueError):
            return {}

    @property
    def status(self) -> str:
        recorded = str(self._status_file().get("status", "starting"))
        if self.process.is_alive():
            return recorded if recorded in ("starting", "running") else "running"
        code = self.process.exitcode
        if recorded == "failed" or (recorded in ("finished", "stopped") and code == 0):
            return recorded
        if self._stopping:
            return "stopped"
        return "finished" if code == 0 else "failed"

    @property
    def returncode(self) -> int | None:
        return self.process.exitcode

    @property
    def error(self) -> str | None:
        err = self._status_file().get("error")
        if err is None and self.status == "failed":
            err = f"the training process exited with code {self.returncode}"
        return err

    def metrics(self) -> list[dict[str, Any]]:
        path = self.output_dir / "metrics.jsonl"
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                break  # a line still being written
        return rows

    def stream(self, poll_s: float = 0.5, timeout: float | None = None) -> Iterator[dict[str, Any]]:
        """Yield metric rows as they are written; ends once the child has exited and all are read."""
        seen = 0
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            alive = self.process.is_alive()
            rows = self.metrics()
            yield from rows[seen:]
            seen = len(rows)
            if not alive:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"training still running after {timeout}s; call stop() or wait longer")
            time.sleep(poll_s)

    def wait(self, timeout: float | None = None) -> str:
        self.process.join(timeout)
        return self.status

    def stop(self, grace_s: float = 30.0) -> str:
        """Ask the run to stop after its current step (it saves), then terminate, then kill."""
        if not self.process.is_alive():
            return self.status
        self._stopping = True
        (self.output_dir / "STOP").touch()
        self.process.join(grace_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        return self.status

    def log_tail(self, lines: int = 40) -> str:
        path = self.output_dir / "train.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def launch(config: TrainConfig | str | Path, **overrides: Any) -> TrainingHandle:
    """Start training in a spawned child process and return its handle at once."""
    if not isinstance(config, TrainConfig):
        config = TrainConfig.load(config, **overrides)
    elif overrides:
        config = config.replace(**overrides)
    out = Path(config.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("STOP", "status.json"):
        (out / stale).unlink(missing_ok=True)
    data = config.replace(output_dir=str(out)).to_dict()
    registrations = carry()  # what cannot be copied travels as its reason: the child's lookup of it says why
    _write_status(out, "starting")
    try:
        process = mp.get_context("spawn").Process(
            target=_child_main, args=(data, registrations), name="workbench-train"
        )
        process.start()
    except OSError as exc:
        raise TrainingError(f"could not start the training process: {exc}") from exc
    return TrainingHandle(process, out)


__all__ = ["STATUSES", "TrainingHandle", "launch"]
