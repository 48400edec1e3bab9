"""The demo's data: a world, a tokenizer corpus, and teacher trajectories with a short-horizon twin.

The teacher is `workbench.worlds.scripted.coder.world_coder`, run for real (sandboxed kernels, search through
the gateway) with the tiny model's own codec, so its trajectories are token-exact SFT data. Each
multi-hop trajectory also yields its *short-horizon* twin: the same first two turns, then
`submit_final_answer(e)` after one hop (what `world_coder(give_up=1)` writes). SFT on a mix where
the twin outnumbers the full chain gives a model that usually stops early on multi-hop questions:
the room for RL to improve is a real, visible behaviour (finishing the chain), not noise.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import Iterable, Sequence
from typing import Any

from workbench.trajectory import Step, Task, Trajectory
from workbench.worlds import World
from workbench.worlds.scripted.coder import COMPACT_HOP_TURN, COMPACT_PLAN_TURN, HOP_TURN, PLAN_TURN, SUBMIT_TURN


def teacher_id(compact: bool = False) -> str:
    """Fingerprint of the teacher's cells (`world_coder(compact=...)`): part of every cache key built
    from its trajectories."""
    cells = (COMPACT_PLAN_TURN + COMPACT_HOP_TURN) if compact else (PLAN_TURN + HOP_TURN)
    return hashlib.sha1((cells + SUBMIT_TURN).encode()).hexdigest()[:6]


TEACHER_ID = teacher_id()
"""The fingerprint of `make demo`'s teacher (the full cells)."""


def tokenizer_texts(world: World, trajectories: Sequence[Trajectory]) -> list[str]:
    """Text for the tokenizer: passages, questions, and the teacher's turns and observations."""
    texts = [p["contents"] for p in world.corpus()] + [t.question for t in world.tasks("train")]
    for traj in trajectories:
        for step in traj.steps:
            texts += [step.raw, step.observation_text]
    return texts


def short_horizon_twin(traj: Trajectory, codec: Any) -> Trajectory | None:
    """The trajectory a teacher that answers after one hop would have produced, or None when the
    task has one hop. Token-exact: the shared prefix is reused, the submit turn encoded once."""
    if (traj.hops or 0) < 2 or len(traj.steps) < 3:
        return None
    twin = copy.deepcopy(traj)
    twin.id = traj.id + "-short"
    keep = twin.steps[:2]  # plan, then hop 1
    ids = codec.encode(SUBMIT_TURN)
    keep.append(
        Step(
            index=2,
            raw=SUBMIT_TURN,
            think="Answer now.",
            code="submit_final_answer(e)",
            completion_ids=ids,
            logprobs=[0.0] * len(ids),
            finish_reason="stop",
            prompt_ids=traj.steps[2].prompt_ids,
        )
    )  # the context hop 2 saw (its notepad the newest; None with kept notepads: that context only grew)
    twin.steps = keep
    first_hop = (keep[1].observation or {}).get("stdout", "").split(" | todo:")[0].strip()
    twin.final_answer = first_hop or None
    twin.metadata = {**traj.metadata, "teacher": "short-horizon"}
    return twin


def in_task_order(trajectories: Iterable[Trajectory], tasks: Sequence[Task]) -> list[Trajectory]:
    """`trajectories` in the order of `tasks` (a task's own trajectories keep their order). A store
    yields them in the order episodes finished, which depends on kernel timing; SFT data read back from
    a cache must come in the order a fresh run gives it, or the cached run trains on another sequence."""
    index = {task.id: i for i, task in enumerate(tasks)}
    trajs = list(trajectories)
    missing = {t.task.id for t in trajs if t.task.id not in index}
    if missing:
        raise ValueError(f"trajectories of tasks not asked for: {sorted(missing)[:3]}")
    return sorted(trajs, key=lambda t: index[t.task.id])


def sft_mix(
    trajectories: Sequence[Trajectory], codec: Any, *, give_up: float, copies: int, seed: int
) -> list[Trajectory]:
    """`copies` draws per task: multi-hop tasks give the short twin with probability `give_up`."""
    rng = random.Random(seed)
    out: list[Trajectory] = []
    for traj in trajectories:
        twin = short_horizon_twin(traj, codec)
        for _ in range(copies):
            out.append(twin if twin is not None and rng.random() < give_up else traj)
    return out


__all__ = [
    "SUBMIT_TURN",
    "TEACHER_ID",
    "in_task_order",
    "sft_mix",
    "short_horizon_twin",
    "teacher_id",
    "tokenizer_texts",
]
