"""The trainer's live model as a `Policy`, so episode runners sample from the weights being trained.

    policy = live_policy(model, tokenizer)          # TransformersPolicy.from_model: batched, token-exact
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=32, stop=["</search>"]))

On a GPU with `use_vllm=True`, `VLLMTrainerPolicy` samples through TRL's colocated vLLM engine.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from workbench.kernel.sync import run_sync
from workbench.policies.base import Completion, SamplingParams
from workbench.policies.codec import TokenizerCodec


class VLLMTrainerPolicy:
    """GPU path: sample through the trainer's colocated vLLM engine (`use_vllm=True`).

    TRL syncs the weights into vLLM before each rollout. Per-call settings go through TRL's
    documented `vllm_generation` object: the turn's token cap and stop strings are set for the call
    and restored after; every rank must make the same calls (TRL collective in server mode).
    """

    name = "vllm-colocate"

    def __init__(self, trainer: Any) -> None:
        self.tokenizer = trainer.processing_class
        self.codec = TokenizerCodec(self.tokenizer)
        self.vg = trainer.vllm_generation

    def describe(self) -> dict[str, Any]:
        return {"backend": "vllm-colocate", "name": self.name}

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return await asyncio.to_thread(self.generate_sync, prompts, params)

    def _finish(self, row: list[int], lp: list[float], params: SamplingParams) -> Completion:
        """Cut after EOS or the first stop string, keeping ids and logprobs aligned."""
        eos, finish = self.tokenizer.eos_token_id, "length"
        if eos is not None and eos in row:
            cut = row.index(eos) + 1
            row, lp, finish = row[:cut], lp[:cut], "eos"
        for k in range(1, len(row) + 1):
            if params.stop and any(s in self.codec.decode(row[:k]) for s in params.stop):
                row, lp, finish = row[:k], lp[:k], "stop"
                break
        return Completion(text=self.codec.decode([t for t in row if t != eos]), token_ids=row,
                          logprobs=[float(x) for x in lp], finish_reason=finish)

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
    """Wrap a live model as a policy (the policies layer's `TransformersPolicy.from_model`)."""
    from workbench.policies.hf import TransformersPolicy

    return TransformersPolicy.from_model(model, tokenizer, name="live")


__all__ = ["VLLMTrainerPolicy", "live_policy", "run_sync"]
