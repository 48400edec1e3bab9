"""One base model in memory, one LoRA adapter per role (peft's multi-adapter `PeftModel`).

    adapters = RoleAdapters(base_model, ("solver", "proposer"), rank=16)
    adapters.activate("proposer")                  # the proposer's adapter computes and is the only weight that trains
    sft(adapters.model, tok, proposer_episodes)    # trains the proposer's adapter alone
    solver = adapters.policy("solver", tok)        # generates with the solver's adapter, whichever role trains
    train_fn = adapters.train_fn(inner)            # run_drzero's hook: each update trains its role's adapter

The base weights stay frozen; each role's knowledge is its adapter (`lora_A`/`lora_B` on every linear
layer). `activate(role)` is peft's `set_adapter`: the role's adapter is active and trainable, every
other adapter frozen, so an optimizer built after it (an SFT or a TRL trainer) holds that role's
tensors only and the other roles' stay bit-identical. A role's policy switches to its adapter for
each generation batch and back afterwards (`using`), restoring which adapter was active and every
tensor's `requires_grad`: the proposer's HRPO rollouts are scored by solver attempts mid-step, and
the proposer's trainer must find its own adapter active and trainable again for the loss.
Generations of different roles take turns on one lock; the trainer's own rollouts (its live policy,
the active adapter) run between them, never beside them (`run_drzero` proposes, then attempts).
`versions[role]` counts the changes to a role's tensors (each optimizer step that holds them, each
`load`): a copy of the adapter elsewhere (vLLM's, `workbench.demo.vllm_adapters`) is stale when it differs.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.policies.hf import TransformersPolicy

if TYPE_CHECKING:
    import torch

    from workbench.evolve.loop import TrainFn, TrainRequest


class RoleAdapters:
    """A frozen base model with one LoRA adapter per role, on all its linear layers (rank `rank`,
    alpha 2·rank); the first role's adapter starts active."""

    def __init__(self, base: Any, roles: Sequence[str], *, rank: int, seed: int = 0) -> None:
        import torch
        from peft import LoraConfig, get_peft_model
        from torch.optim.optimizer import register_optimizer_step_post_hook

        if rank <= 0 or not roles or len(set(roles)) != len(roles):
            raise ConfigError(
                f"RoleAdapters needs distinct role names and a LoRA rank > 0 (got roles {list(roles)}, rank {rank}); "
                "for the SmolLM2 demo set sft_lora_r, e.g. --set sft_lora_r=16"
            )
        config = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear", task_type="CAUSAL_LM")
        torch.manual_seed(seed)  # lora_A's initialisation: same seed, same adapters
        self.model = get_peft_model(base, config, adapter_name=roles[0])
        for role in roles[1:]:
            self.model.add_adapter(role, config)
        self.model.set_adapter(roles[0])
        self.roles = tuple(roles)
        self.lock = threading.RLock()
        self.versions = dict.fromkeys(self.roles, 0)
        owners = {id(p): role for role in self.roles for p in self._parameters(role)}
        this = weakref.ref(self)

        def count_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            adapters = this()
            if adapters is None:
                return
            for role in {owners[id(p)] for group in optimizer.param_groups for p in group["params"] if id(p) in owners}:
                adapters.versions[role] += 1

        hook = register_optimizer_step_post_hook(count_step)
        weakref.finalize(self, hook.remove)

    def _check(self, role: str) -> None:
        if role not in self.roles:
            raise ConfigError(f"no adapter for role {role!r}; the roles are {', '.join(self.roles)}")

    def activate(self, role: str) -> None:
        """Make `role`'s adapter the one the model computes with and the only one that trains."""
        self._check(role)
        with self.lock:
            self.model.set_adapter(role)

    @contextmanager
    def using(self, role: str) -> Iterator[None]:
        """Compute with `role`'s adapter inside the block; then restore the active adapter and every
        tensor's `requires_grad` as they were."""
        self._check(role)
        with self.lock:
            previous = self.model.active_adapter
            trainable = {name: p.requires_grad for name, p in self.model.named_parameters()}
            self.model.set_adapter(role)
            try:
                yield
            finally:
                self.model.set_adapter(previous)
                for name, p in self.model.named_parameters():
                    p.requires_grad_(trainable[name])

    def _parameters(self, role: str) -> list[torch.nn.Parameter]:
        return [p for n, p in self.model.named_parameters() if f".{role}." in n]

    def tensors(self, role: str) -> dict[str, torch.Tensor]:
        """Copies of `role`'s adapter tensors, by parameter name."""
        self._check(role)
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if f".{role}." in n}

    def policy(self, role: str, tokenizer: Any, *, name: str | None = None, seed: int | None = None) -> AdapterPolicy:
        """A policy that generates with `role`'s adapter (see `AdapterPolicy`)."""
        self._check(role)
        return AdapterPolicy.over(self, role, tokenizer, name=name or f"demo-{role}", seed=seed)

    def save(self, role: str, path: Path) -> Path:
        """Write `role`'s adapter under `path/<role>/` (peft's `adapter_config.json` + `adapter_model.safetensors`)."""
        self._check(role)
        self.model.save_pretrained(str(path), selected_adapters=[role])
        return path

    def load(self, role: str, path: Path) -> None:
        """Replace `role`'s adapter weights with the ones `save(role, path)` wrote."""
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        self._check(role)
        weights = load_file(str(Path(path) / role / "adapter_model.safetensors"))
        result = set_peft_model_state_dict(self.model, weights, adapter_name=role)
        unfit = [k for k in getattr(result, "unexpected_keys", ()) if "lora_" in k]
        if unfit or len(weights) != len(self.tensors(role)):
            raise ConfigError(f"{path}: its adapter does not fit this model ({unfit[:3]}); delete {path} to retrain")
        self.versions[role] += 1

    def train_fn(self, inner: TrainFn) -> TrainFn:
        """`run_drzero`'s train_fn: activate the request's role, then run `inner` (its trainer's optimizer
        then holds that role's adapter alone)."""

        def train_fn(req: TrainRequest) -> dict[str, Any] | None:
            self.activate(req.role)
            return inner(req)

        return train_fn


class AdapterPolicy(TransformersPolicy):
    """`TransformersPolicy` over a `RoleAdapters` model that generates each batch with one role's adapter."""

    adapters: RoleAdapters
    role: str

    @classmethod
    def over(
        cls, adapters: RoleAdapters, role: str, tokenizer: Any, *, name: str, seed: int | None = None
    ) -> AdapterPolicy:
        policy = cls.from_model(adapters.model, tokenizer, name=name, seed=seed)
        assert isinstance(policy, AdapterPolicy)
        policy.adapters, policy.role = adapters, role
        return policy

    def forward(self, **inputs: Any) -> Any:
        """A forward pass with this role's adapter; the active adapter is back before any completion is
        handed back (a trainer of the other role never computes with this one's)."""
        with self.adapters.using(self.role):
            return super().forward(**inputs)


__all__ = ["AdapterPolicy", "RoleAdapters"]
