"""The OpenAI completions wire format as `workbench serve-model` speaks it: request models and their
validation (every refusal a `BadRequest` naming the field), and the choices sent back (text, stop
reason, token ids, logprobs with -inf reported as -9999.0 as vLLM does)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.errors import ConfigError
from workbench.policies.base import Codec, Completion
from workbench.policies.sampling import MAX_TOP_LOGPROBS, LogitControls
from workbench.webio import BadRequest, parse_json, validation_message

_FLOOR = -9999.0  # what a logprob of -inf is reported as (JSON has no infinities; vLLM does the same)


@dataclass(frozen=True)
class ModelLimits:
    """What one request may ask for: bodies over `max_body_bytes` get 413; more than
    `max_choices` completions (prompts × n) in one request get 400."""

    max_body_bytes: int = 16 << 20
    max_choices: int = 256

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_choices"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CompletionRequest(StrictModel):
    model: str | None = None
    prompt: str | list[int] | list[str] | list[list[int]]
    max_tokens: int | None = 16
    temperature: float | None = None  # None: the model's generation config, else 1.0 (as vLLM's server)
    top_p: float | None = None
    top_k: int | None = None  # 0 or -1 = off
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int = 1
    best_of: int | None = None
    logprobs: int | None = None
    logit_bias: dict[str, float] | None = None
    presence_penalty: float | None = 0.0
    frequency_penalty: float | None = 0.0
    repetition_penalty: float | None = 1.0
    return_token_ids: bool = False
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = False
    spaces_between_special_tokens: bool = False
    echo: bool = False
    stream: bool = False
    suffix: str | None = None
    user: str | None = None


class TokenizeRequest(StrictModel):
    model: str | None = None
    prompt: str | None = None
    messages: list[dict[str, str]] | None = None
    add_special_tokens: bool | None = None  # default: true for a prompt, false for messages (as vLLM)
    add_generation_prompt: bool = True


class DetokenizeRequest(StrictModel):
    model: str | None = None
    tokens: list[int]


def parse_request(model: type[BaseModel], raw: bytes) -> Any:
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise BadRequest(validation_message(exc)) from None


def refuse_unsupported(req: CompletionRequest) -> None:
    refused = {
        "stream": (req.stream, "streaming is not supported; send stream=false"),
        "echo": (req.echo, "echo is not supported; the prompt is in prompt_token_ids (return_token_ids=true)"),
        "suffix": (bool(req.suffix), "suffix (insertion) is not supported"),
        "best_of": (
            req.best_of not in (None, req.n),
            "best_of other than n is not supported; sample n and rank them yourself",
        ),
        "spaces_between_special_tokens": (
            req.spaces_between_special_tokens,
            "spaces_between_special_tokens=true is not supported; special tokens decode without added spaces",
        ),
    }
    for name, (bad, why) in refused.items():
        if bad:
            raise BadRequest(f"{name}: {why}")


def prompt_ids(req: CompletionRequest, codec: Any) -> list[list[int]]:
    p = req.prompt
    if isinstance(p, str):
        return [codec.encode(p)]
    if not p:
        raise BadRequest("prompt is empty: send text, a list of token ids, or a list of either")
    if isinstance(p[0], int):
        return [list(p)]
    return [codec.encode(x) if isinstance(x, str) else list(x) for x in p]


def logit_controls(req: CompletionRequest) -> LogitControls | None:
    if req.logprobs is not None and not 0 <= req.logprobs <= MAX_TOP_LOGPROBS:
        raise BadRequest(f"logprobs must be between 0 and {MAX_TOP_LOGPROBS}, got {req.logprobs}")
    bias: dict[int, float] = {}
    for key, value in (req.logit_bias or {}).items():
        try:
            bias[int(key)] = value
        except ValueError:
            raise BadRequest(f'logit_bias keys must be token ids (as strings, e.g. "42"), got {key!r}') from None
    controls = LogitControls(
        logit_bias=bias,
        presence_penalty=0.0 if req.presence_penalty is None else req.presence_penalty,
        frequency_penalty=0.0 if req.frequency_penalty is None else req.frequency_penalty,
        repetition_penalty=1.0 if req.repetition_penalty is None else req.repetition_penalty,
        top_logprobs=req.logprobs or 0,
    )
    return controls if controls.adjusts_logits or controls.top_logprobs else None


def encode_text(codec: Codec, text: str, special: bool) -> list[int]:
    tokenizer = getattr(codec, "tokenizer", None)  # a TokenizerCodec's
    if special and tokenizer is not None:
        return list(tokenizer.encode(text, add_special_tokens=True))
    return codec.encode(text)


def finite_logprob(x: float) -> float:
    return x if math.isfinite(x) else _FLOOR


def choice(
    index: int, prompt_ids: list[int], c: Completion, req: CompletionRequest, stop: list[str], codec: Codec
) -> dict[str, Any]:
    text = c.text
    tokenizer = getattr(codec, "tokenizer", None)  # a TokenizerCodec's
    if req.skip_special_tokens and tokenizer is not None:
        shown = c.token_ids[:-1] if c.finish_reason == "eos" else c.token_ids
        text = str(tokenizer.decode(shown, skip_special_tokens=True, clean_up_tokenization_spaces=False))
    stop_reason: str | int | None = None
    if c.finish_reason == "stop":
        stop_reason = next((s for s in stop if s in text), None)
        if stop_reason is not None and not req.include_stop_str_in_output:
            text = text[: text.find(stop_reason)]  # OpenAI leaves the stop string out; the ids keep it
    choice: dict[str, Any] = {
        "index": index,
        "text": text,
        "logprobs": None,
        "finish_reason": "length" if c.finish_reason == "length" else "stop",
        "stop_reason": stop_reason,
    }
    if req.logprobs is not None:
        choice["logprobs"] = choice_logprobs(c, codec)
    if req.return_token_ids:
        choice["token_ids"] = c.token_ids
        choice["prompt_token_ids"] = prompt_ids
    return choice


def choice_logprobs(c: Completion, codec: Codec) -> dict[str, Any]:
    """OpenAI's completions logprobs: tokens, token_logprobs, top_logprobs (one {token: logprob}
    per position, the top alternatives and the sampled token), text_offset. As in vLLM, a
    logprob of -inf (a token top-k / top-p ruled out) is reported as -9999.0."""
    pieces = [codec.decode([t]) for t in c.token_ids]
    offsets, at = [], 0
    for piece in pieces:
        offsets.append(at)
        at += len(piece)
    lps = [finite_logprob(x) for x in (c.logprobs or [])]
    tops = getattr(c, "top_logprobs", None) or [{} for _ in c.token_ids]
    top_logprobs = []
    # strict=False: a completion without logprobs gets no entries (lps is empty)
    for tok, lp, alts in zip(c.token_ids, lps, tops, strict=False):
        entry = {codec.decode([t]): finite_logprob(v) for t, v in alts.items()}
        entry[codec.decode([tok])] = lp  # tokens that decode alike share a key: the sampled one wins
        top_logprobs.append(entry)
    return {"tokens": pieces, "token_logprobs": lps, "top_logprobs": top_logprobs, "text_offset": offsets}
