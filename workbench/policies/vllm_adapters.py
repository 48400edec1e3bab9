"""Each role's LoRA adapter served by one vLLM engine: `AdapterVLLMPolicy` and `adapter_engine`.

    engine = adapter_engine(base_dir, rank=16)                       # the base's weights, LoRA slots for 2 roles
    solver = AdapterVLLMPolicy(engine, adapters, "solver", workdir)  # samples with the solver adapter's tensors
    train(config, ..., model=adapters.model, policy=solver)         # GRPO rollouts sample through it

vLLM (its CPU build too) serves PEFT LoRA adapters beside the base weights (`enable_lora`): each request
names an adapter (`LoRARequest(name, id, path)`) and the base weights are never touched, so one engine
serves every role, as one `workbench.train.lora.RoleAdapters` model holds them for training. A role's policy
writes the role's adapter (`save`: ~20 MB for rank 16 on SmolLM2) whenever `versions` says an optimizer step or
a load changed it, and names it under a new id, so each batch samples from the tensors the trainer holds at
that moment. The roles' batches take turns on the adapters' lock (one engine, one caller at a time), as the
transformers policies' do. tests/policies/test_vllm_adapters.py checks logprobs against peft's and the switch
after a step; bench/bench_adapters.py measures both engines.
"""

from __future__ import annotations

import itertools
import shutil
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from workbench.errors import ConfigError
from workbench.policies.base import Completion
from workbench.policies.batching import Row
from workbench.policies.vllm_colocated import ColocatedVLLMPolicy

_LORA_IDS = itertools.count(1)  # vLLM caches an adapter by its id: each saved version gets a new one


class ServedAdapters(Protocol):
    """What an `AdapterVLLMPolicy` reads of the adapters it serves (`workbench.train.lora.RoleAdapters` has it)."""

    @property
    def roles(self) -> tuple[str, ...]: ...

    @property
    def versions(self) -> dict[str, int]:
        """Changes to each role's tensors: a served copy is stale when its count differs."""
        ...

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """Held by one generation at a time across the roles."""
        ...

    def save(self, role: str, path: Path) -> Path:
        """Write `role`'s adapter under `path/<role>/` (peft's files)."""
        ...


def adapter_engine(base: Path, *, rank: int, roles: int = 2, seed: int = 0, kv_cache_gib: int = 2) -> Any:
    """The process's in-process vLLM engine on `base`'s weights, serving `roles` LoRA adapters of rank `rank`."""
    from transformers import AutoConfig

    from workbench.policies.vllm_colocated import check_model, colocated_llm

    check_model(AutoConfig.from_pretrained(base))
    return colocated_llm(base, kv_cache_gib=kv_cache_gib, seed=seed, lora_rank=rank, max_loras=roles)


class AdapterVLLMPolicy(ColocatedVLLMPolicy):
    """Generates every batch with `role`'s adapter as `adapters` holds it now, through `llm` (`adapter_engine`)."""

    def __init__(self, llm: Any, adapters: ServedAdapters, role: str, workdir: Path, *, name: str | None = None):
        super().__init__(llm, name=name or f"demo-{role}")
        if role not in adapters.roles:
            raise ConfigError(f"no adapter for role {role!r}; the roles are {', '.join(adapters.roles)}")
        self.adapters, self.role, self.workdir = adapters, role, Path(workdir)
        self._served: tuple[int, Any, Path] | None = None  # (version, LoRARequest, its directory)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "adapter": self.role}

    def lora_request(self) -> Any:
        """The role's adapter as vLLM knows it, written and renamed first if its tensors changed."""
        from vllm.lora.request import LoRARequest

        version = self.adapters.versions[self.role]
        if self._served is not None and self._served[0] == version:
            return self._served[1]
        directory = self.workdir / f"{self.role}-v{version}"
        self.adapters.save(self.role, directory)
        lora_id = next(_LORA_IDS)
        request = LoRARequest(f"{self.role}-{lora_id}", lora_id, str(directory / self.role))
        if self._served is not None:  # vLLM never asks for an old id again: its files can go
            shutil.rmtree(self._served[2], ignore_errors=True)
        self._served = (version, request, directory)
        return request

    def _run_rows(self, rows: list[Row]) -> list[Completion]:
        with self.adapters.lock:  # one engine, one caller: the other role's batch waits
            return super()._run_rows(rows)


__all__ = ["AdapterVLLMPolicy", "ServedAdapters", "adapter_engine"]
