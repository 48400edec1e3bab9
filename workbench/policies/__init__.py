"""Model backends behind one protocol (`base.Policy`): scripted, local transformers,
OpenAI-compatible HTTP, in-process vLLM; plus `load_policy(spec)` and `serve-model`.

    from workbench.policies import SamplingParams, generate, load_policy
    policy = load_policy("transformers:runs/tiny")
    [out] = generate(policy, [policy.codec.chat(messages)], SamplingParams(stop=["</code>"]))

Heavy libraries (torch, transformers, vllm) load only when a backend is built.
"""

from workbench.policies.base import ByteCodec, Codec, Completion, Policy, SamplingParams, generate
from workbench.policies.codec import TokenizerCodec
from workbench.policies.hf import TransformersPolicy
from workbench.policies.openai_compat import OpenAIPolicy
from workbench.policies.registry import load_policy, register_backend, register_scripted
from workbench.policies.scripted import ScriptedPolicy
from workbench.policies.server import ModelServer
from workbench.policies.vllm_engine import VLLMPolicy

__all__ = [
    "ByteCodec",
    "Codec",
    "Completion",
    "ModelServer",
    "OpenAIPolicy",
    "Policy",
    "SamplingParams",
    "ScriptedPolicy",
    "TokenizerCodec",
    "TransformersPolicy",
    "VLLMPolicy",
    "generate",
    "load_policy",
    "register_backend",
    "register_scripted",
]
