"""One rank of `python -m workbench ARGS`, with what it writes and its weights after each step recorded.

    python -m torch.distributed.run --nproc_per_node 2 tests/train/rank_probe.py PROBE_DIR WATCHED train CONFIG

Runs the `workbench` command exactly as `python -m workbench ARGS` does, after installing:
- an audit hook plus wrappers of `torch.save` and safetensors' `save_file` (which write from C++/Rust, past
  the hook) that note every path under WATCHED this process opens for writing, creates, renames or opens
  as SQLite;
- a trainer callback writing a SHA-256 of every parameter after each optimizer step;
- a wrapper of the NB-Agent episode runner noting the task ids this rank ran;
- the reward `probe.spread` (the share of distinct token ids in the first turn), which differs between a
  tiny model's rollouts where exact match is 0 for all, so each step has advantages to train on.
At exit it writes PROBE_DIR/rank<RANK>.json:
{"writes": [[event, path], ...], "weights": [[step, sha], ...], "tasks": [[task id, ...], ...]}.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import runpy
import sys
from pathlib import Path

probe_dir, watched = Path(sys.argv[1]), os.path.realpath(sys.argv[2])
sys.argv = ["workbench", *sys.argv[3:]]
rank = os.environ.get("RANK", "0")
record: dict[str, list] = {"writes": [], "weights": [], "tasks": []}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def note(path: object, event: str = "save") -> None:
    if isinstance(path, (str, bytes, os.PathLike)):
        full = os.path.realpath(os.fsdecode(path))
        if full == watched or full.startswith(watched + os.sep):
            record["writes"].append([event, full])


def audit(event: str, args: tuple) -> None:
    if event == "open" and isinstance(args[2], int) and args[2] & WRITE_FLAGS:
        note(args[0], event)
    elif event in ("os.mkdir", "os.remove", "os.rmdir") and isinstance(args[-1], int):
        pass  # a name relative to a directory fd (shutil.rmtree of a kernel's scratch dir), not under WATCHED
    elif event in ("os.mkdir", "os.remove", "os.rmdir", "shutil.rmtree", "sqlite3.connect", "os.truncate"):
        note(args[0], event)
    elif event in ("os.rename", "os.link", "os.symlink"):
        note(args[1], event)


def wrap_writer(module: object, name: str, path_arg: int) -> None:
    original = getattr(module, name)

    def writer(*args: object, **kwargs: object) -> object:
        note(args[path_arg] if len(args) > path_arg else kwargs.get("filename", kwargs.get("f")))
        return original(*args, **kwargs)

    setattr(module, name, writer)


def main() -> None:
    import safetensors.torch
    import torch

    wrap_writer(torch, "save", 1)
    wrap_writer(safetensors.torch, "save_file", 1)
    sys.addaudithook(audit)
    from transformers import TrainerCallback

    import workbench.train.run as run
    from workbench.rewards import reward

    @reward("probe.spread")
    def spread(traj: object, ctx: object) -> float:
        ids = traj.steps[0].completion_ids if traj.steps else []  # type: ignore[attr-defined]
        return len(set(ids)) / max(len(ids), 1)

    class WeightsHash(TrainerCallback):
        def on_step_end(self, args: object, state: object, control: object, model: object = None, **kw: object) -> None:
            digest = hashlib.sha256()
            for name, tensor in sorted(model.state_dict().items()):  # type: ignore[attr-defined]
                digest.update(name.encode() + tensor.detach().cpu().contiguous().numpy().tobytes())
            record["weights"].append([state.global_step, digest.hexdigest()])  # type: ignore[attr-defined]

    train, call = run.train, run.NBAgentEpisodes.__call__

    def probed_train(config: object, **kwargs: object) -> object:
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), WeightsHash()]  # type: ignore[misc]
        return train(config, **kwargs)

    async def probed_call(self: object, tasks: list, policy: object) -> list:
        record["tasks"].append([t.id for t in tasks])
        return await call(self, tasks, policy)  # type: ignore[arg-type]

    run.train, run.NBAgentEpisodes.__call__ = probed_train, probed_call  # type: ignore[method-assign]
    atexit.register(lambda: (probe_dir / f"rank{rank}.json").write_text(json.dumps(record)))
    runpy.run_module("workbench", run_name="__main__", alter_sys=True)


main()
