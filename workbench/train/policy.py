"""The trainer's live model as a `Policy`, so episode runners sample from the weights being trained.

    policy = live_policy(model, tokenizer)          # TransformersPolicy.from_model: batched, token-exact
    [out] = await policy.generate([ids], SamplingParams(max_new_tokens=32, stop=["</search>"]))

With `use_vllm=True` (colocate, one process: CPU or GPU) episodes sample through
`workbench.policies.vllm_colocated.ColocatedVLLMPolicy`, a `VLLMPolicy` over the trainer's in-process engine;
with several processes or server mode, through `workbench.policies.vllm_trainer.VLLMTrainerPolicy` (TRL's
`vllm_generation.generate`). Both lived here once and still import from here; new code imports them from
`workbench.policies`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.kernel.sync import run_sync
from workbench.policies.vllm_colocated import ColocatedVLLMPolicy  # old import path (see above)
from workbench.policies.vllm_trainer import VLLMTrainerPolicy  # old import path (see above)

if TYPE_CHECKING:
    from workbench.policies.hf import TransformersPolicy


def live_policy(model: Any, tokenizer: Any, seed: int | None = None) -> TransformersPolicy:
    """Wrap a live model as a policy (the policies layer's `TransformersPolicy.from_model`)."""
    from workbench.policies.hf import TransformersPolicy

    return TransformersPolicy.from_model(model, tokenizer, name="live", seed=seed)


__all__ = ["ColocatedVLLMPolicy", "VLLMTrainerPolicy", "live_policy", "run_sync"]
