"""The trainer's live model as a `Policy`, so episode runners sample from the weights being trained.

    policy = live_policy(model, tokenizer)          # TransformersPolicy.from_model: batched, token-exact
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=32, stop=["</search>"]))

With `use_vllm=True` (colocate, one process: CPU or GPU) episodes sample through
`workbench.policies.vllm_colocated.ColocatedVLLMPolicy`, a `VLLMPolicy` over the trainer's in-process engine;
with several processes or server mode, through `workbench.policies.vllm_trainer.VLLMTrainerPolicy` (TRL's
`vllm_generation.generate`). Both lived here once: their old names still import from here, with a
DeprecationWarning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench._lazy import moved_names
from workbench.kernel.sync import run_sync

if TYPE_CHECKING:
    from workbench.policies.hf import TransformersPolicy


def live_policy(model: Any, tokenizer: Any, seed: int | None = None) -> TransformersPolicy:
    """Wrap a live model as a policy (the policies layer's `TransformersPolicy.from_model`)."""
    from workbench.policies.hf import TransformersPolicy

    return TransformersPolicy.from_model(model, tokenizer, name="live", seed=seed)


# The vLLM policies' old import path: each name warns and comes from its module under `workbench.policies`.
__getattr__ = moved_names(
    __name__,
    {
        "ColocatedVLLMPolicy": "workbench.policies.vllm_colocated:ColocatedVLLMPolicy",
        "VLLMTrainerPolicy": "workbench.policies.vllm_trainer:VLLMTrainerPolicy",
    },
)


__all__ = ["live_policy", "run_sync"]
