"""`VLLMTrainerPolicy`: episodes of a TRL trainer that runs on several processes or in vLLM server mode sample
through TRL's own engine (`trainer.vllm_generation.generate`, GPU).

    policy = VLLMTrainerPolicy(trainer)   # a GRPOTrainer built with use_vllm=True
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=64, stop=["</code>"]))

On one process (CPU or one GPU) training samples through `workbench.policies.vllm_colocated` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from workbench.policies.base import Completion, SamplingParams
from workbench.policies.codec import TokenizerCodec


class VLLMTrainerPolicy:
    """Several processes or server mode: sample through TRL's `vllm_generation.generate` (GPU).

    TRL syncs the weights into vLLM before each rollout. Per-call settings go through TRL's
    documented `vllm_generation` object: the turn's token cap and stop strings are set for the call
    and restored after; every rank must make the same calls (TRL collective in server mode).
    """

    name = "vllm-colocate"
    context_size: int | None = None  # unknown here: TRL's engine holds the window

    def __init__(self, trainer: Any) -> None:
        self.tokenizer = trainer.processing_class
        self.codec = TokenizerCodec(self.tokenizer)
        self.vg = trainer.vllm_generation

    def describe(self) -> dict[str, Any]:
        return {"backend": "vllm-colocate", "name": self.name}

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return await asyncio.to_thread(self._generate_blocking, prompts, params)

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
        return Completion(
            text=self.codec.decode([t for t in row if t != eos]),
            token_ids=row,
            logprobs=[float(x) for x in lp],
            finish_reason=finish,
        )

    def _generate_blocking(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        vg = self.vg
        saved = (vg.max_completion_length, dict(vg.generation_kwargs or {}))
        vg.max_completion_length = params.max_new_tokens
        vg.generation_kwargs = {**saved[1], "stop": list(params.stop) or None, "include_stop_str_in_output": True}
        try:
            _, completion_ids, logprobs, _ = vg.generate(
                prompts=[list(p) for p in prompts], images=None, num_generations=1
            )
        finally:
            vg.max_completion_length, vg.generation_kwargs = saved
        out = []
        for ids, lps in zip(completion_ids, logprobs, strict=True):
            flat = [float(tok[0]) if tok and tok[0] is not None else 0.0 for tok in (lps or [[0.0]] * len(ids))]
            out.append(self._finish(list(ids), flat, params))
        return out


__all__ = ["VLLMTrainerPolicy"]
