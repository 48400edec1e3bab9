"""The trainer's live model as a `Policy`, so episode runners sample from the weights being trained.

    policy = live_policy(model, tokenizer)          # TransformersPolicy.from_model when available
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=32, stop=["</search>"]))

`LivePolicy` is the fallback used when `workbench.policies.transformers` is not installed: batched
`model.generate` with left padding, sampled ids kept as they are (cut after EOS or the first stop
string), and each kept token's log-probability under the sampling distribution.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

import torch

from workbench.errors import PolicyError
from workbench.policies.base import Completion, SamplingParams


class TokenizerCodec:
    """`Codec` over a Hugging Face tokenizer. `chat` uses the chat template when there is one."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def chat(self, messages: Sequence[dict[str, str]]) -> list[int]:
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            out = tok.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True)
            return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    @property
    def eos_token_id(self) -> int | None:
        return self.tokenizer.eos_token_id


class LivePolicy:
    """A `Policy` over an in-memory `PreTrainedModel` (the one a trainer is updating)."""

    name = "live"

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.codec = TokenizerCodec(tokenizer)

    def describe(self) -> dict[str, Any]:
        cfg = getattr(self.model, "config", None)
        return {"backend": "live", "model": getattr(cfg, "name_or_path", "") or type(self.model).__name__}

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return self.generate_sync(prompts, params)

    def generate_sync(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        if not prompts:
            return []
        tok = self.tokenizer
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
        attn = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            if not p:
                raise PolicyError("LivePolicy.generate got an empty prompt; encode at least one token")
            ids[i, width - len(p):] = torch.tensor(p)
            attn[i, width - len(p):] = 1
        device = next(self.model.parameters()).device
        sample = params.temperature > 0
        kwargs: dict[str, Any] = dict(max_new_tokens=params.max_new_tokens, do_sample=sample,
                                      pad_token_id=pad_id, return_dict_in_generate=True, output_scores=True)
        if sample:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=params.top_k or None)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(input_ids=ids.to(device), attention_mask=attn.to(device), **kwargs)
                logps = self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
        except Exception as exc:  # noqa: BLE001 - surfaced as a PolicyError with the cause
            raise PolicyError(f"live model failed to generate: {exc}") from exc
        finally:
            self.model.train(was_training)
        new = out.sequences[:, width:].tolist()
        logps = logps.float().cpu().tolist()
        return [self._finish(row, lp, params) for row, lp in zip(new, logps)]

    def _finish(self, row: list[int], lp: list[float], params: SamplingParams) -> Completion:
        eos = self.tokenizer.eos_token_id
        finish = "length"
        if eos is not None and eos in row:
            cut = row.index(eos) + 1
            row, lp, finish = row[:cut], lp[:cut], "eos"
        full = self.tokenizer.decode(row, skip_special_tokens=False)
        if params.stop and any(s in full for s in params.stop):
            # the earliest token after which a stop string appears
            for k in range(1, len(row) + 1):
                text = self.tokenizer.decode(row[:k], skip_special_tokens=False)
                if any(s in text for s in params.stop):
                    row, lp, finish = row[:k], lp[:k], "stop"
                    break
        text = self.tokenizer.decode(row, skip_special_tokens=True)
        return Completion(text=text, token_ids=row, logprobs=[float(x) for x in lp], finish_reason=finish)


class VLLMTrainerPolicy(LivePolicy):
    """GPU path: sample through the trainer's colocated vLLM engine (`use_vllm=True`).

    TRL syncs the weights into vLLM before each rollout. Per-call settings go through TRL's
    documented `vllm_generation` object: the turn's token cap and stop strings are set for the call
    and restored after; every rank must make the same calls (TRL collective in server mode).
    """

    name = "vllm-colocate"

    def __init__(self, trainer: Any) -> None:
        super().__init__(trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class)
        self.vg = trainer.vllm_generation

    def generate_sync(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        vg = self.vg
        saved = (vg.max_completion_length, dict(vg.generation_kwargs or {}))
        vg.max_completion_length = params.max_new_tokens
        vg.generation_kwargs = {**saved[1], "stop": list(params.stop) or None, "include_stop_str_in_output": True}
        try:
            _, completion_ids, logprobs, _ = vg.generate(prompts=[list(p) for p in prompts], images=None,
                                                         num_generations=1)
        finally:
            vg.max_completion_length, vg.generation_kwargs = saved
        out = []
        for ids, lps in zip(completion_ids, logprobs):
            flat = [float(tok[0]) if tok and tok[0] is not None else 0.0 for tok in (lps or [[0.0]] * len(ids))]
            out.append(self._finish(list(ids), flat, params))
        return out


def live_policy(model: Any, tokenizer: Any) -> Any:
    """Wrap a live model as a policy: the policies layer's `TransformersPolicy` if present, else ours."""
    try:
        from workbench.policies.transformers import TransformersPolicy  # type: ignore[import-not-found]
    except ImportError:
        return LivePolicy(model, tokenizer)
    return TransformersPolicy.from_model(model, tokenizer)


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, also inside a running loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


__all__ = ["LivePolicy", "TokenizerCodec", "VLLMTrainerPolicy", "live_policy", "run_sync"]
