"""Every policy backend satisfies the `Policy` protocol: under mypy (each backend class assigned to a
`Policy`, checked in a subprocess with the project's configuration) and at runtime (`isinstance`
on backends built here on CPU from the tiny local model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy_check import run_mypy

from workbench.policies import Codec, Policy, ScriptedPolicy, TransformersPolicy

ROOT = Path(__file__).resolve().parents[2]

BACKENDS = {
    "TransformersPolicy": "workbench.policies.hf",
    "VLLMPolicy": "workbench.policies.vllm_engine",
    "OpenAIPolicy": "workbench.policies.openai_compat",
    "ScriptedPolicy": "workbench.policies.scripted",
    "ColocatedVLLMPolicy": "workbench.policies.vllm_colocated",
    "VLLMTrainerPolicy": "workbench.policies.vllm_trainer",
}


def check_source(tmp_path: Path, source: str) -> tuple[int, str]:
    """mypy with the project's configuration on `source`; (exit status, report)."""
    path = tmp_path / "conformance.py"
    path.write_text(source)
    return run_mypy(path)


CONTROL = """
class NoCodec:  # the control: a backend without a codec is not a Policy
    name = "no-codec"
    context_size: int | None = None

    async def generate(self, prompts: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        return []

    def describe(self) -> dict[str, Any]:
        return {}


def control(p: NoCodec) -> Policy:
    return p
"""


@pytest.mark.slow  # mypy reads torch's and transformers' stubs: a minute or more with a cold cache
@pytest.mark.xdist_group("mypy")  # one worker: the mypy runs share a cache
def test_each_backend_class_is_a_policy_under_mypy(tmp_path):
    lines = [
        "from collections.abc import Sequence",
        "from typing import Any",
        "from workbench.policies.base import Completion, Policy, SamplingParams",
        *(f"from {module} import {cls}" for cls, module in BACKENDS.items()),
        "",
        "",
        f"def as_policies({', '.join(f'p{i}: {cls}' for i, cls in enumerate(BACKENDS))}) -> list[Policy]:",
        f"    return [{', '.join(f'p{i}' for i in range(len(BACKENDS)))}]",
        "",
        "",
        CONTROL,
    ]
    status, report = check_source(tmp_path, "\n".join(lines))
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert len(errors) == 1, report  # only the control fails: every backend class is a Policy
    assert '"NoCodec"' in errors[0] and '"Policy"' in errors[0], report
    assert '"codec"' in report or "codec" in report.split(errors[0])[1], report
    assert status == 1


def test_the_backends_built_here_are_policies_at_runtime(tiny_policy):
    assert isinstance(tiny_policy, TransformersPolicy) and isinstance(tiny_policy, Policy)
    assert isinstance(tiny_policy.codec, Codec)
    assert isinstance(ScriptedPolicy(lambda text, turn: "<code>\nprint(1)\n</code>"), Policy)


def test_a_backend_without_a_codec_is_not_a_policy_at_runtime():
    class NoCodec:
        name, context_size = "no-codec", None

        async def generate(self, prompts, params):
            return []

        def describe(self):
            return {}

    assert not isinstance(NoCodec(), Policy)


@pytest.mark.vllm
@pytest.mark.slow
def test_the_vllm_backend_is_a_policy_at_runtime(vllm_policy):
    from workbench.policies.vllm_engine import VLLMPolicy

    assert isinstance(vllm_policy, VLLMPolicy) and isinstance(vllm_policy, Policy)
