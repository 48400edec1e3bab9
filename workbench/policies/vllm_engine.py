"""`VLLMPolicy`: an in-process `vllm.LLM` (GPU). vLLM is imported only when one is built.

    policy = VLLMPolicy("/models/Qwen3-4B", gpu_memory_utilization=0.5, max_model_len=8192)
    [out] = await policy.generate([policy.codec.chat(msgs)], SamplingParams(stop=["</code>"]))

Keyword arguments go to `vllm.LLM(model=PATH, **engine_kwargs)`; by default
`logprobs_mode="processed_logprobs"` (what TRL's importance-sampling correction expects).
Prompts are sent as `TokensPrompt(prompt_token_ids=...)`; each row gets its own
`vllm.SamplingParams(logprobs=0, seed=seed+i, include_stop_str_in_output=True,
skip_special_tokens=False)`. Concurrent `generate` calls are merged like TransformersPolicy's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.errors import PolicyError
from workbench.policies.base import Completion
from workbench.policies.batching import BatchingBackend, Row
from workbench.policies.codec import TokenizerCodec

INSTALL_HINT = (
    "VLLMPolicy needs vLLM, which is not installed in this environment. On a CUDA machine install "
    "the GPU extra (pip install 'workbench[gpu]', vllm>=0.22,<=0.31), or use "
    "TransformersPolicy(PATH) locally, or OpenAIPolicy(URL) against a `vllm serve` server."
)


class VLLMPolicy(BatchingBackend):
    def __init__(self, model_path: str | Path, *, batch_window_ms: float = 5.0, max_batch_size: int = 256, **engine_kwargs: Any):
        try:
            import vllm
            from vllm.inputs import TokensPrompt
        except ImportError as exc:
            raise PolicyError(INSTALL_HINT) from exc
        super().__init__(batch_window_ms=batch_window_ms, max_batch_size=max_batch_size)
        self._vllm = vllm
        self._tokens_prompt = TokensPrompt
        engine_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        self.llm = vllm.LLM(model=str(model_path), **engine_kwargs)
        self.codec = TokenizerCodec(self.llm.get_tokenizer())
        self.model_path = str(model_path)
        self.name = f"vllm:{Path(model_path).name}"

    def describe(self) -> dict[str, Any]:
        return {"backend": "vllm", "name": self.name, "model_path": self.model_path, "vllm": self._vllm.__version__, "logprobs": "processed"}

    def _check_row(self, row: Row) -> None:
        if not row.prompt:
            raise PolicyError("empty prompt: encode at least one token (policy.codec.chat(messages))")

    def _sampling_params(self, row: Row):
        p = row.params
        return self._vllm.SamplingParams(
            n=1,
            max_tokens=p.max_new_tokens,
            temperature=p.temperature,
            top_p=p.top_p,
            top_k=p.top_k if p.top_k > 0 else -1,
            stop=list(p.stop) or None,
            seed=row.seed,
            logprobs=0,
            include_stop_str_in_output=True,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
        )

    def _run_rows(self, rows: list[Row]) -> list[Completion]:
        prompts = [self._tokens_prompt(prompt_token_ids=r.prompt) for r in rows]
        outputs = self.llm.generate(prompts, [self._sampling_params(r) for r in rows], use_tqdm=False)
        return [self._completion(o.outputs[0]) for o in outputs]

    def _completion(self, out: Any) -> Completion:
        ids = list(out.token_ids)
        logprobs = None
        if out.logprobs is not None:  # one {token_id: Logprob} per position; the sampled id is always in it
            logprobs = [float(pos[t].logprob) for t, pos in zip(ids, out.logprobs)]
        if out.finish_reason == "length":
            finish = "length"
        elif isinstance(out.stop_reason, str):
            finish = "stop"
        else:  # None = EOS, int = a stop token id
            finish = "eos"
        eos = self.codec.eos_token_id
        shown = ids[:-1] if finish == "eos" and ids and ids[-1] == eos else ids
        return Completion(text=self.codec.decode(shown), token_ids=ids, logprobs=logprobs, finish_reason=finish)


__all__ = ["INSTALL_HINT", "VLLMPolicy"]
