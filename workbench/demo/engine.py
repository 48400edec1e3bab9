"""`--engine vllm`: the demo's generation (RL rollouts, solver attempts, evaluation) through vLLM.

One in-process vLLM engine serves the whole run (`workbench.train.vllm_rollout.colocated_llm`, the
engine training syncs after every optimizer step): evaluation loads the evaluated model's weights
into it first, so each stage samples from exactly the weights it names.
"""

from __future__ import annotations

from typing import Any

ENGINES = ("transformers", "vllm")
KV_CACHE_GIB = 2  # SmolLM2 keeps 46 KB a token: ~45k tokens, most of 60 concurrent episodes (vLLM queues the rest)


def demo_policy(model: Any, tok: Any, name: str, engine: str = "transformers", seed: int = 0) -> Any:
    """The policy a stage samples from: the live model (transformers) or vLLM holding its weights."""
    if engine == "vllm":
        from workbench.train.policy import ColocatedVLLMPolicy
        from workbench.train.vllm_rollout import check_model, colocated_llm, load_model_weights

        check_model(model.config)
        llm = colocated_llm(model.name_or_path, kv_cache_gib=KV_CACHE_GIB, seed=seed)
        load_model_weights(llm, model)
        return ColocatedVLLMPolicy(llm, name=name)
    from workbench.policies import TransformersPolicy

    return TransformersPolicy.from_model(model, tok, name=name)


__all__ = ["ENGINES", "demo_policy"]
