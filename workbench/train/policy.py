"""The trainer's live model as a `Policy`, so episode runners sample from the weights being trained.

    policy = live_policy(model, tokenizer)          # TransformersPolicy.from_model: batched, token-exact
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=32, stop=["</search>"]))

With `use_vllm=True` (colocate, one process: CPU or GPU) episodes sample through
`ColocatedVLLMPolicy`, a `VLLMPolicy` over the trainer's in-process engine
(`workbench.train.vllm_rollout`); with several processes or server mode, through
`VLLMTrainerPolicy` (TRL's `vllm_generation.generate`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.kernel.sync import run_sync
from workbench.policies.base import Completion, SamplingParams
from workbench.policies.codec import TokenizerCodec
from workbench.policies.vllm_engine import VLLMPolicy

if TYPE_CHECKING:
    from workbench.policies.hf import TransformersPolicy


class ColocatedVLLMPolicy(VLLMPolicy):
    """`VLLMPolicy` over an engine that already exists (the trainer's colocated `vllm.LLM`).

    Concurrent episode turns merge into one `llm.generate` batch (the policies layer's batching);
    token ids and the sampled tokens' logprobs are vLLM's (processed logprobs: after temperature).
    """

    def __init__(
        self, llm: Any, *, name: str = "vllm-colocate", batch_window_ms: float = 5.0, max_batch_size: int = 256
    ) -> None:
        import vllm
        from vllm.inputs import TokensPrompt

        from workbench.policies.batching import BatchingBackend
        from workbench.train.vllm_rollout import on_cpu

        BatchingBackend.__init__(self, batch_window_ms=batch_window_ms, max_batch_size=max_batch_size)
        self._vllm, self._tokens_prompt, self.llm = vllm, TokensPrompt, llm
        self.codec = TokenizerCodec(llm.get_tokenizer())
        model_config = llm.llm_engine.model_config
        self.model_path, self.name, self.on_cpu = str(model_config.model), name, on_cpu()
        self.engine_kwargs = {"dtype": str(model_config.dtype).removeprefix("torch.")}
        self.max_model_len = model_config.max_model_len
        self.context_size = self.max_model_len
        self.vocab_size = model_config.get_vocab_size()

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "vllm-colocate",
            "name": self.name,
            "model_path": self.model_path,
            "vllm": self._vllm.__version__,
            "device": "cpu" if self.on_cpu else "cuda",
            "dtype": self.engine_kwargs["dtype"],
            "logprobs": "processed",
        }

    def close(self) -> None:
        """The engine belongs to the trainer's process cache (`vllm_rollout.release_engines`)."""


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


def live_policy(model: Any, tokenizer: Any, seed: int | None = None) -> TransformersPolicy:
    """Wrap a live model as a policy (the policies layer's `TransformersPolicy.from_model`)."""
    from workbench.policies.hf import TransformersPolicy

    return TransformersPolicy.from_model(model, tokenizer, name="live", seed=seed)


__all__ = ["ColocatedVLLMPolicy", "VLLMTrainerPolicy", "live_policy", "run_sync"]
