"""The versioned trajectory schema: what one rollout leaves behind.

A `Trajectory` is plain data (dataclasses of JSON-able values), so it round-trips through the
SQLite store, JSONL, Parquet and `datasets` without pickling.

Token-in/token-out: each `Step` keeps the exact sampled `completion_ids` and `logprobs` (and,
where the backend gives them, the model's own `raw_logprobs` beside them), the
`observation_ids` appended after them, and `prompt_ids` whenever the context was (re)built
(the first turn and after each trim). `Trajectory.segments()` rebuilds, without re-tokenizing,
the sequences training needs: prompt ids, completion ids and the env mask (1 = model token,
0 = observation token).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, get_args

from workbench._lazy import moved_names
from workbench.errors import ConfigError, SchemaVersionError

SCHEMA_VERSION = (
    3  # v2: Step.raw_logprobs (a v1 trajectory reads with None there); v3: Step.host_calls (was tool_calls)
)

Termination = Literal[
    "submitted",  # the model called submit_final_answer
    "max_steps",
    "token_budget",  # the generated-token budget or the context window ran out
    "wall_clock",
    "no_code",  # the model produced no executable code and nothing to continue
    "kernel_died",
    "policy_error",
    "worker_died",  # a remote worker died mid-episode (the Ray executor)
    "error",  # anything else; `Trajectory.error` says what
]
"""Why an episode ended (`Trajectory.termination`; "" until it ends)."""

TERMINATIONS: tuple[Termination, ...] = get_args(Termination)


class Segment(TypedDict):
    """One training sequence of a trajectory (see `Trajectory.segments`)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]


@dataclass
class Task:
    """One question. `metadata` holds e.g. {"hops": 2, "split": "train", "source": "world"}."""

    id: str
    question: str
    golden_answers: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Task:
        if "question" not in row:
            raise ConfigError("task has no 'question' field; tasks need id, question, golden_answers")
        answers = row.get("golden_answers", row.get("answers", []))
        if isinstance(answers, str):
            answers = [answers]
        meta = dict(row.get("metadata") or {})
        for key, value in row.items():
            if key not in ("id", "question", "golden_answers", "answers", "metadata"):
                meta.setdefault(key, value)
        return cls(
            id=str(row.get("id", uuid.uuid4().hex[:12])),
            question=str(row["question"]),
            golden_answers=[str(a) for a in answers],
            metadata=meta,
        )


@dataclass
class HostCall:
    """One host call: the kernel's call of a host tool, as the tool gateway saw it (not a model's tool call)."""

    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None
    duration_s: float = 0.0
    started_at: float = 0.0


@dataclass
class Step:
    """One Think → Code → Observe turn."""

    index: int
    raw: str  # the full generated text of the turn
    think: str | None = None
    code: str | None = None
    format_flags: list[str] = field(default_factory=list)  # empty = well formed
    observation: dict[str, Any] | None = None  # Observation.to_dict(), None if nothing ran
    observation_text: str = ""  # exactly what the model was shown in <output>
    notepad: dict[str, Any] = field(default_factory=dict)  # snapshot after the step
    host_calls: list[HostCall] = field(default_factory=list)  # the kernel's calls of host tools (v2: "tool_calls")
    prompt_ids: list[int] | None = None  # set when the context was (re)built before this turn
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None  # as the policy sampled them (its describe()["logprobs"] says which)
    raw_logprobs: list[float] | None = None  # the model's own, before temperature/top-k/top-p; None = not given
    observation_ids: list[int] = field(default_factory=list)
    finish_reason: str = ""  # "stop" | "length" | "eos" | "error"
    generate_s: float = 0.0
    execute_s: float = 0.0
    context_tokens: int = 0  # tokens in the context the turn was generated from
    reward: float | None = None  # this turn's reward (RewardSpec.score_steps); None = not scored per turn
    policy_version: int | None = None  # optimizer steps behind the weights that sampled it (asynchronous RL)


@dataclass
class Trajectory:
    """One episode of one task, from first prompt to termination."""

    task: Task
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    run_id: str = ""
    role: str = "solver"  # "solver" | "proposer" | anything a user names
    steps: list[Step] = field(default_factory=list)
    final_answer: str | None = None
    termination: Termination | Literal[""] = ""  # "" until the episode ends
    error: str | None = None
    rewards: dict[str, float] = field(default_factory=dict)  # component → value; "total" included
    reward_spec: str | None = None  # name of the spec that gave `rewards`
    lineage: dict[str, Any] = field(default_factory=dict)  # policy, checkpoint, origin trajectory …
    metadata: dict[str, Any] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    schema_version: int = SCHEMA_VERSION

    # -- derived views -------------------------------------------------------------------------
    @property
    def hops(self) -> int | None:
        hops = self.task.metadata.get("hops")
        return int(hops) if hops is not None else None

    @property
    def reward(self) -> float | None:
        return self.rewards.get("total")

    @property
    def num_host_calls(self) -> int:
        return sum(len(s.host_calls) for s in self.steps)

    def segments(self) -> list[Segment]:
        """Token sequences for training, one per context (a trim starts a new one).

        Each is {"prompt_ids", "completion_ids", "env_mask", "logprobs"}; observation tokens carry
        mask 0 and logprob 0.0. The trailing observation of the last step is dropped: nothing was
        generated after it.
        """
        segments: list[Segment] = []
        current: Segment | None = None
        for step in self.steps:
            if step.prompt_ids is not None or current is None:
                current = {
                    "prompt_ids": list(step.prompt_ids or []),
                    "completion_ids": [],
                    "env_mask": [],
                    "logprobs": [],
                }
                segments.append(current)
            current["completion_ids"] += step.completion_ids
            current["env_mask"] += [1] * len(step.completion_ids)
            current["logprobs"] += step.logprobs or [0.0] * len(step.completion_ids)
            current["completion_ids"] += step.observation_ids
            current["env_mask"] += [0] * len(step.observation_ids)
            current["logprobs"] += [0.0] * len(step.observation_ids)
        if segments and self.steps:
            tail = len(self.steps[-1].observation_ids)
            if tail:
                last = segments[-1]
                del last["completion_ids"][-tail:], last["env_mask"][-tail:], last["logprobs"][-tail:]
        return segments

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        version = int(data.get("schema_version", 1))
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"trajectory schema v{version} is newer than this workbench (v{SCHEMA_VERSION}); "
                "upgrade workbench to read it"
            )
        data = dict(data)
        data["task"] = Task(**data["task"])
        data["steps"] = [_step_from_dict(s) for s in data.get("steps", [])]
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _step_from_dict(data: dict[str, Any]) -> Step:
    data = dict(data)
    calls = (
        data.pop("tool_calls", None) if "host_calls" not in data else data.get("host_calls")
    )  # v2 wrote "tool_calls"
    data["host_calls"] = [HostCall(**c) for c in calls or []]
    known = {f.name for f in dataclasses.fields(Step)}
    return Step(**{k: v for k, v in data.items() if k in known})


__all__ = ["SCHEMA_VERSION", "TERMINATIONS", "HostCall", "Segment", "Step", "Task", "Termination", "Trajectory"]


# the name before the glossary split host calls from a model's tool calls
__getattr__ = moved_names(__name__, {"ToolCall": "workbench.trajectory:HostCall"})
