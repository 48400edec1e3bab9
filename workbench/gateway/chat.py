"""One `/v1/chat/completions` call: prompt by the multi-turn rule, sampling as applied, generation,
the reply parsed, the call recorded. The reply is an `openai.types.chat.ChatCompletion`.

    answer = await chat_call(state, policy, req, auxiliary=False)
    answer.completion      # ChatCompletion (what the harness gets)
    answer.step            # the recorded Step (None for an auxiliary call)
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.errors import WorkbenchError
from workbench.gateway.replies import ChatReply, parse_reply
from workbench.gateway.state import CallRecord, RolloutState
from workbench.gateway.wire import ChatRequest, RequestRefused, template_message
from workbench.policies.base import Completion, Policy, SamplingParams, policy_context_size
from workbench.webio import BadRequest, parse_json

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

    from workbench.trajectory import Step

__all__ = ["CallAnswer", "call_record", "chat_call", "sampling", "serve_chat", "serve_completion", "served_text"]


@dataclass
class CallAnswer:
    completion: Any  # ChatCompletion or openai.types.Completion
    records: list[CallRecord]  # one per choice
    steps: list[Step | None]  # one per choice (None for an auxiliary call)
    prompt_ids: list[int]

    @property
    def record(self) -> CallRecord:
        return self.records[0]

    @property
    def step(self) -> Step | None:
        return self.steps[0]


async def chat_call(state: RolloutState, policy: Policy, req: ChatRequest, *, auxiliary: bool) -> CallAnswer:
    """Serve and record one chat request (400s as `RequestRefused` / `BadRequest`)."""
    req.refuse_unsupported(training=state.config.training is not None)
    required, name = req.required_call
    messages = [template_message(m, i) for i, m in enumerate(req.messages)]
    tools = [t.model_dump(exclude_none=True) for t in req.tools] if req.tools else None
    plan = state.plan(messages, tools)
    # A required call: the call's opener follows the assistant header on the prompt side (mask 0), so the sample
    # completes a call; the recorded history holds the opener, so the next call continues it token for token.
    opener = state.renderer.call_opener(name) if required else ""
    if opener:
        plan.open_call(state.renderer.encode(opener))
    params, requested, applied = sampling(state, policy, req.token_limit, req, len(plan.prompt_ids))
    outs, latency = await sample(policy, plan.prompt_ids, params, req.n)
    call_id, records, steps, choices = f"chatcmpl-{uuid.uuid4().hex}", [], [], []
    for j, out in enumerate(outs):
        wants_tools = bool(tools) and req.tool_choice != "none"
        reply = parse_reply(opener + served_text(out, params.stop), wants_tools, state.renderer.tool_dialect)
        record = call_record(state, "chat.completions", req.model, requested, applied, latency, out, auxiliary)
        record.id, record.choice, record.streamed, record.opener = call_id, j, req.stream, opener
        record.tool_calls, record.reasoning = [c.to_dict() for c in reply.tool_calls], reply.reasoning
        steps.append(state.capture(plan, out, record, reply))
        records.append(record)
        choices.append(chat_choice(j, reply, out, req.logprobs, policy))
    completion = chat_completion(call_id, req.model or policy.name, choices, len(plan.prompt_ids), outs)
    return CallAnswer(completion, records, steps, plan.prompt_ids)


async def sample(
    policy: Policy, prompt: list[int], params: SamplingParams, n: int = 1
) -> tuple[list[Completion], float]:
    """`n` samples of `prompt` (choice j with seed + j when a seed is set) and the time they took."""
    start = time.perf_counter()
    try:
        outs = await policy.generate([prompt] * n, params)
    except WorkbenchError as exc:
        raise RequestRefused(f"generation failed: {exc}", status=500, code="generation_failed") from None
    return list(outs), time.perf_counter() - start


def sampling(
    state: RolloutState, policy: Policy, max_tokens: int | None, req: Any, prompt_len: int
) -> tuple[SamplingParams, dict[str, Any], dict[str, Any]]:
    """The sampling a call gets (training overrides what the harness asks), what it asked and what it got."""
    stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
    requested = {
        "temperature": req.temperature,
        "top_p": req.top_p,
        "max_tokens": max_tokens,
        "stop": stop,
        "seed": req.seed,
    }
    applied = dict(requested)
    training = state.config.training
    if training is not None:
        applied.update(temperature=training.temperature, top_p=training.top_p)
        if training.max_tokens is not None:
            applied["max_tokens"] = training.max_tokens
    context = policy_context_size(policy)
    if context is not None:
        room = context - prompt_len
        wanted = applied["max_tokens"]
        if room < 1 or (wanted is not None and wanted > room):
            raise RequestRefused(
                f"This model's maximum context length is {context} tokens. However, you requested "
                f"{prompt_len + (wanted or 1)} tokens ({prompt_len} in the messages, {wanted or 1} in the completion). "
                "Please reduce the length of the messages or completion.",
                "messages",
                code="context_length_exceeded",
            )
        applied["max_tokens"] = wanted if wanted is not None else room
    elif applied["max_tokens"] is None:
        applied["max_tokens"] = state.config.default_max_tokens
    params = SamplingParams(
        max_new_tokens=applied["max_tokens"],
        temperature=applied["temperature"],
        top_p=applied["top_p"],
        stop=stop,
        seed=applied["seed"],
    )
    return params, requested, applied


def served_text(out: Completion, stop: list[str]) -> str:
    """The sampled text as the reply shows it: a stop string that ended it is left out (the ids keep it)."""
    text = out.text
    if out.finish_reason == "stop":
        hit = min(((text.find(s), s) for s in stop if s in text), default=None)
        if hit is not None:
            text = text[: hit[0]]
    return text


def call_record(
    state: RolloutState,
    endpoint: str,
    model: str | None,
    requested: dict[str, Any],
    applied: dict[str, Any],
    latency: float,
    out: Completion,
    auxiliary: bool,
) -> CallRecord:
    return CallRecord(
        id=f"chatcmpl-{uuid.uuid4().hex}" if endpoint == "chat.completions" else f"cmpl-{uuid.uuid4().hex}",
        endpoint=endpoint,
        model=model,
        step=None,
        segment_start=False,
        fork=None,
        parent=None,
        sampling_requested=requested,
        sampling_applied=applied,
        latency_s=latency,
        finish_reason=out.finish_reason,
        policy_version=out.policy_version,
        tool_protocol=state.renderer.tool_protocol,
        auxiliary=auxiliary,
    )


def finish_reason(out: Completion, reply: ChatReply | None) -> str:
    if reply is not None and reply.tool_calls:
        return "tool_calls"
    return "length" if out.finish_reason == "length" else "stop"


def chat_choice(index: int, reply: ChatReply, out: Completion, logprobs: bool, policy: Policy) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    if reply.reasoning is not None:
        message["reasoning"] = reply.reasoning
    choice: dict[str, Any] = {"index": index, "message": message, "finish_reason": finish_reason(out, reply)}
    choice["logprobs"] = {"content": token_logprobs(out, policy)} if logprobs else None
    return choice


def chat_completion(
    call_id: str, model: str, choices: list[dict[str, Any]], n_prompt: int, outs: list[Completion]
) -> ChatCompletion:
    from openai.types.chat import ChatCompletion

    n_out = sum(len(out.token_ids) for out in outs)
    return ChatCompletion.model_validate(
        {
            "id": call_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out},
        }
    )


def token_logprobs(out: Completion, policy: Policy) -> list[dict[str, Any]]:
    """OpenAI's per-token logprobs of a chat choice (-inf reported as -9999.0, as vLLM does)."""
    from workbench.policies.completions_wire import finite_logprob

    codec = policy.codec
    lps = out.logprobs or [0.0] * len(out.token_ids)
    rows = []
    for tok, lp in zip(out.token_ids, lps, strict=False):
        piece = codec.decode([tok])
        rows.append({"token": piece, "logprob": finite_logprob(lp), "bytes": list(piece.encode()), "top_logprobs": []})
    return rows


async def serve_chat(
    policy: Policy,
    persist: Callable[[RolloutState, CallAnswer], None],
    state: RolloutState,
    raw: bytes,
    auxiliary: bool,
) -> tuple[CallAnswer, str]:
    from workbench.policies.completions_wire import parse_request

    req = parse_request(ChatRequest, raw)
    answer = await chat_call(state, policy, req, auxiliary=auxiliary)
    persist(state, answer)
    usage = bool(req.stream_options and req.stream_options.include_usage)
    return answer, ("usage" if usage else "plain") if req.stream else ""


async def serve_completion(
    policy: Policy,
    persist: Callable[[RolloutState, CallAnswer], None],
    state: RolloutState,
    raw: bytes,
    auxiliary: bool,
) -> tuple[CallAnswer, str]:
    """One `/v1/completions` call (a single prompt, text or ids); its stream mode ("", "plain", "usage")."""
    from openai.types import Completion as OpenAICompletion

    from workbench.policies.completions_wire import CompletionRequest, choice, parse_request, prompt_ids

    body = _completions_body(raw)
    stream = "usage" if (body.pop("stream_options", None) or {}).get("include_usage") else "plain"
    stream = stream if body.pop("stream", False) else ""
    req = parse_request(CompletionRequest, json.dumps(body).encode())
    if req.n != 1 or req.echo or req.suffix or req.best_of not in (None, 1):
        raise RequestRefused(
            "n, echo, suffix and best_of are not served by the model gateway; send one prompt, n=1", "n"
        )
    prompts = prompt_ids(req, policy.codec)
    if len(prompts) != 1:
        raise RequestRefused("prompt: send one prompt per request (a string or a list of token ids)", "prompt")
    plan = state.plan_tokens(prompts[0])
    params, requested, applied = sampling(state, policy, req.max_tokens, req, len(plan.prompt_ids))
    [out], latency = await sample(policy, plan.prompt_ids, params)
    record = call_record(state, "completions", req.model, requested, applied, latency, out, auxiliary)
    record.streamed = bool(stream)
    step = state.capture(plan, out, record, None)
    row = choice(0, plan.prompt_ids, out, req, params.stop, policy.codec)
    n_prompt, n_out = len(plan.prompt_ids), len(out.token_ids)
    completion = OpenAICompletion.model_validate(
        {
            "id": record.id,
            "object": "text_completion",
            "created": int(time.time()),
            "model": req.model or policy.name,
            "choices": [row],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out},
        }
    )
    answer = CallAnswer(completion, [record], [step], plan.prompt_ids)
    persist(state, answer)
    return answer, stream


def _completions_body(raw: bytes) -> dict[str, Any]:
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body
