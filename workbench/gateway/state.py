"""One rollout's state on the gateway side: its trajectory, its recorded calls, and the prompt rule.

    state = RolloutState.open(task, renderer, config)
    plan = state.plan(messages, tools)            # prompt ids, parent call, the tokens framing the new messages
    step = state.capture(plan, completion, record) # a Step of state.trajectory (write it before replying)

Steps map onto `Trajectory.segments()`: a call that continues the last step takes its new
messages' tokens as that step's `observation_ids` (mask 0) and sets no `prompt_ids`; any other call
(the first, a fork, a branch off an earlier call) starts a segment with its full `prompt_ids`. So
storage grows with the deltas, not with the prompts. Each call's record (the sampling asked and
applied, latency, the fork reason, whether the reply was delivered, ...) is a `CallRecord` in
`trajectory.metadata["gateway"]["calls"]`, its `step` the index of its Step; auxiliary calls have
no Step (never trained on) and keep their ids in the record.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from workbench.gateway.config import GatewayConfig
from workbench.gateway.history import CallIndex, CallNode, ForkReason, message_digests, reply_message, tools_key
from workbench.gateway.render import ChatRenderer
from workbench.gateway.replies import ChatReply
from workbench.policies.base import Completion, Policy
from workbench.policies.chat_framing import end_of_turn_ids
from workbench.trajectory import Step, Task, Trajectory

__all__ = ["CallRecord", "Plan", "RolloutState", "RolloutStatus"]

RolloutStatus = Literal["open", "finished", "error"]


@dataclass
class Plan:
    """How one call's prompt was built."""

    prompt_ids: list[int]
    parent: CallNode | None = None
    delta_ids: list[int] = field(default_factory=list)  # what follows the parent's sampled ids
    fork: ForkReason | None = None  # why no parent was found (None for the rollout's first call)
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: str = ""

    def open_call(self, opener_ids: list[int]) -> None:
        """Put a tool call's opening tokens after the assistant header, on the prompt side (`tool_choice`)."""
        self.prompt_ids = self.prompt_ids + opener_ids
        if self.parent is not None:
            self.delta_ids = self.delta_ids + opener_ids


@dataclass
class CallRecord:
    """What the gateway records of one call beside its Step."""

    id: str
    endpoint: str  # "chat.completions" | "completions"
    model: str | None  # the model name the harness asked for
    step: int | None  # index in trajectory.steps; None for an auxiliary call
    segment_start: bool
    fork: str | None
    parent: int | None  # the step this call continues
    sampling_requested: dict[str, Any]
    sampling_applied: dict[str, Any]
    latency_s: float
    finish_reason: str
    policy_version: int | None
    tool_protocol: str
    choice: int = 0  # the choice's index when the call asked for n > 1
    streamed: bool = False
    delivered: bool = False
    auxiliary: bool = False
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    reasoning: str | None = None
    opener: str = ""  # a tool call's opening text the gateway put on the prompt side (tool_choice required / named)
    prompt_ids: list[int] | None = None  # auxiliary calls only (no Step holds them)
    completion_ids: list[int] | None = None


@dataclass
class RolloutState:
    """A rollout as the server sees it. Mutated under `lock` (the server thread records, a user's thread finishes)."""

    id: str
    key: str
    renderer: ChatRenderer
    config: GatewayConfig
    trajectory: Trajectory
    status: RolloutStatus = "open"
    index: CallIndex = field(default_factory=CallIndex)
    forks: Counter[str] = field(default_factory=Counter)
    records: list[CallRecord] = field(default_factory=list)
    nodes: list[CallNode] = field(default_factory=list)
    replies: OrderedDict[str, Any] = field(default_factory=OrderedDict)  # body digest -> the first try's future
    lock: threading.Lock = field(default_factory=threading.Lock)
    io: threading.Lock = field(default_factory=threading.Lock)  # orders this rollout's store writes
    policy: Policy | None = None  # the policy this rollout samples from; None: the gateway's

    @classmethod
    def open(cls, task: Task, renderer: ChatRenderer, config: GatewayConfig, run_id: str = "") -> RolloutState:
        rid = uuid.uuid4().hex
        traj = Trajectory(task=task, id=rid, run_id=run_id, role="harness")
        traj.metadata["gateway"] = {"tool_protocol": renderer.tool_protocol, "calls": [], "forks": {}, "segments": 0}
        return cls(rid, f"wb-{secrets.token_urlsafe(24)}", renderer, config, traj)

    # -- the prompt rule -------------------------------------------------------------------------------
    def plan(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Plan:
        """The prompt for a chat request: the recorded parent's ids extended, or a new segment's rendering."""
        key = tools_key(tools)
        rewrites = self.config.history == "template" and self.renderer.rewrites_history
        with self.lock:
            found = self.index.find(messages, key)
            first = len(self.index) == 0
        if found.node is not None and not rewrites:
            tail = self.renderer.ids_after_turn(messages, found.turn, tools)
            if tail is not None:
                node = found.node
                ends = node.sampled_ids[-1:] and node.sampled_ids[-1] in end_of_turn_ids(self.renderer.codec)
                eot = self.renderer.end_of_turn_id
                delta = ([] if ends or eot is None else [eot]) + tail
                return Plan(node.prompt_ids + node.sampled_ids + delta, node, delta, None, messages, key)
        reason: ForkReason | None = None
        if not first:
            reason = "template_rewrites_history" if found.node is not None else found.reason
        return Plan(self.renderer.prompt_ids(messages, tools), None, [], reason, messages, key)

    def plan_tokens(self, prompt: list[int]) -> Plan:
        """The plan of a token prompt (`/v1/completions`): it continues the last step when it extends it."""
        with self.lock:
            steps = self.trajectory.steps
            last = self._node_of(len(steps) - 1) if steps else None
        if last is not None:
            done = last.prompt_ids + last.sampled_ids
            if len(prompt) > len(done) and prompt[: len(done)] == done:
                return Plan(prompt, last, prompt[len(done) :])
        return Plan(prompt, None, [], "history_edited" if steps else None)

    def _node_of(self, step: int) -> CallNode | None:
        return next((n for n in reversed(self.nodes) if n.step.index == step), None)

    # -- capture ---------------------------------------------------------------------------------------
    def capture(self, plan: Plan, out: Completion, record: CallRecord, reply: ChatReply | None) -> Step | None:
        """Record one call: a Step (none for an auxiliary call) and its record. Returns the Step."""
        with self.lock:
            gw = self.trajectory.metadata["gateway"]
            if record.auxiliary:
                record.prompt_ids, record.completion_ids = plan.prompt_ids, list(out.token_ids)
                self.records.append(record)
                gw["calls"].append(record)
                return None
            steps = self.trajectory.steps
            step = Step(
                index=len(steps),
                raw=out.text,
                completion_ids=list(out.token_ids),
                logprobs=out.logprobs,
                raw_logprobs=out.raw_logprobs,
                finish_reason=out.finish_reason,
                generate_s=record.latency_s,
                context_tokens=len(plan.prompt_ids),
                policy_version=out.policy_version,
                think=reply.reasoning if reply is not None else None,
            )
            parent = plan.parent
            extends = parent is not None and steps and parent.step is steps[-1] and not parent.step.observation_ids
            if extends and parent is not None:
                parent.step.observation_ids = list(plan.delta_ids)
                record.parent = parent.step.index
            else:
                step.prompt_ids = list(plan.prompt_ids)
                record.parent = parent.step.index if parent is not None else None
                gw["segments"] += 1
            record.segment_start, record.fork, record.step = not extends, plan.fork, step.index
            if plan.fork is not None:
                self.forks[plan.fork] += 1
                gw["forks"] = dict(self.forks)
            steps.append(step)
            self.records.append(record)
            gw["calls"].append(record)
            if reply is not None:
                self._index(plan, out, reply, step, record.sampling_applied.get("stop") or [])
            else:
                self.nodes.append(CallNode(step, plan.prompt_ids, list(out.token_ids), None, "", "", ""))
            return step

    def _index(self, plan: Plan, out: Completion, reply: ChatReply, step: Step, stop: list[str]) -> None:
        message = reply_message(reply)
        digests = message_digests([*plan.messages, message])
        node = CallNode(
            step, plan.prompt_ids, list(out.token_ids), reply.reasoning, plan.tools, digests[-2], digests[-1]
        )
        self.index.add(node)
        self.nodes.append(node)
        # A stop string that ended the sample is left out of the reply but is in the sampled ids: a harness that
        # appends it back (smolagents' CodeAgent re-adds its closing code tag) sends what was sampled.
        hit = next((s for s in stop if out.finish_reason == "stop" and out.text.endswith(s)), None)
        if hit and not reply.tool_calls:
            sampled = {**message, "content": message["content"] + hit}
            self.index.add(replace(node, with_reply=message_digests([*plan.messages, sampled])[-1]))

    def snapshot(self) -> Trajectory:
        """A copy of the trajectory fit to store: records as dicts, in-memory nodes left out. Call under `lock`."""
        traj = self.trajectory
        meta = dict(traj.metadata)
        gw = dict(meta["gateway"])
        gw["calls"] = [asdict(r) if isinstance(r, CallRecord) else r for r in gw["calls"]]
        meta["gateway"] = gw
        return Trajectory(**{**traj.__dict__, "metadata": meta, "steps": list(traj.steps)})

    def finish(self, answer: str | None, error: str | None = None) -> None:
        """Close the rollout: later calls get 404."""
        with self.lock:
            traj = self.trajectory
            self.status = "error" if error else "finished"
            traj.final_answer = answer
            traj.termination = "error" if error else "submitted"
            traj.error = error
            traj.ended_at = time.time()
            self.nodes.clear()
            self.index = CallIndex()
