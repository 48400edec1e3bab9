"""Several training processes: which one this is, as a distributed launcher set it up.

    torchrun --nproc_per_node 2 -m workbench train train.toml
    accelerate launch --config_file two_cpu.yaml -m workbench train train.toml

torchrun and accelerate start one process per rank with `RANK`, `WORLD_SIZE` and the rendezvous
address in the environment; TRL's trainer (through accelerate) turns that into a DDP process group
(gloo on CPU, NCCL on GPUs). Each rank runs its own share of a step's episodes in its own kernels;
gradients are all-reduced, so every rank holds the same weights after each step. Only the main
process (rank 0) writes the trajectory store, metrics.jsonl, checkpoints and the final model.
"""

from __future__ import annotations

import os


def world_size() -> int:
    """How many training processes the launcher started (1 when run directly)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def process_rank() -> int:
    """This process's global rank (0 when run directly)."""
    return int(os.environ.get("RANK", "0"))


def is_main_process() -> bool:
    """Whether this process writes the run's files (rank 0, or the only process)."""
    return process_rank() == 0


__all__ = ["is_main_process", "process_rank", "world_size"]
