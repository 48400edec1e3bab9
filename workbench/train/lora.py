"""LoRA through peft: the adapter a `TrainConfig` asks for, and adapter checkpoints.

    cfg = TrainConfig(model_path="runs/tiny", lora_r=8, lora_alpha=16)
    peft_config = lora_config(cfg)          # a peft.LoraConfig, or None when lora_r is 0
    WorkbenchGRPOTrainer(model, tok, tasks, episodes=runner, config=cfg)   # wraps the model itself

TRL's GRPOTrainer wraps the model with `peft.get_peft_model`; only the adapter's `lora_A`/`lora_B`
tensors train, the base weights stay frozen. With a KL term (`beta > 0`) the reference log-probs
come from the same model with the adapter disabled, so no second copy of the weights is held.
Checkpoints and the final dir hold the adapter only (`adapter_config.json`,
`adapter_model.safetensors`), naming the base model they apply to; `merge_adapter` (the CLI's
`workbench models merge ADAPTER --out DIR`) folds one into its base as a plain model directory.
An adapter dir holds no `config.json`, so the agent settings the run trained under (the model's
`workbench_agent`, e.g. the compact prompt) go beside it in `workbench_agent.json`, and the merged
model carries them again: `eval --policy transformers:MERGED` runs it as trained.

    merge_adapter("runs/train/final", "runs/merged")     # base from the adapter's config, or base=SPEC

One base model in memory, one LoRA adapter per role (peft's multi-adapter `PeftModel`):

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
`load`): a copy of the adapter elsewhere (vLLM's, `workbench.policies.vllm_adapters`) is stale when it differs.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from workbench.errors import ConfigError
from workbench.policies.hf import TransformersPolicy

if TYPE_CHECKING:
    import torch
    from peft import LoraConfig, PeftModel

    from workbench.train.config import TrainConfig

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
AGENT_SETTINGS_FILE = "workbench_agent.json"  # beside an adapter: the agent settings its run trained under
ALL_LINEAR = "all-linear"  # peft's name for every linear layer but the output head


def lora_config(config: TrainConfig) -> LoraConfig | None:
    """The peft `LoraConfig` of a run, or None when `lora_r` is 0 (full fine-tuning)."""
    if config.lora_r == 0:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_target_modules) or ALL_LINEAR,
        task_type="CAUSAL_LM",
    )


def wrap_lora(model: Any, config: TrainConfig) -> PeftModel:
    """`model` with the run's LoRA adapter added (peft's `get_peft_model`): only the adapter trains.
    For loops outside TRL, such as `workbench.train.sft.sft`; GRPO wraps the model itself."""
    peft_config = lora_config(config)
    if peft_config is None:
        raise ConfigError("wrap_lora needs a LoRA run: set TrainConfig.lora_r > 0")
    from peft import get_peft_model

    return get_peft_model(model, peft_config)


def is_adapter_dir(path: str | Path) -> bool:
    """Whether `path` holds a saved peft adapter (what a LoRA run's checkpoints and final dir are)."""
    return (Path(path) / ADAPTER_FILES[0]).is_file()


def adapter_base(adapter_dir: str | Path) -> str:
    """The base model spec an adapter was trained on (its `base_model_name_or_path`)."""
    if not is_adapter_dir(adapter_dir):
        raise ConfigError(
            f"{adapter_dir} holds no peft adapter ({ADAPTER_FILES[0]} missing); give a LoRA run's "
            "checkpoint-N or final directory"
        )
    base = json.loads((Path(adapter_dir) / ADAPTER_FILES[0]).read_text()).get("base_model_name_or_path")
    if not base:
        raise ConfigError(f"{adapter_dir}'s adapter names no base model; pass the base model spec (base=/--base)")
    return str(base)


def save_adapter_settings(model: Any, adapter_dir: str | Path) -> None:
    """Write the agent settings stamped on `model` (its config's `workbench_agent`) beside the adapter
    saved in `adapter_dir`; nothing when the model carries none or the dir holds no adapter."""
    from workbench.policies.base import model_agent_settings

    settings = model_agent_settings(model)
    if settings and is_adapter_dir(adapter_dir):
        (Path(adapter_dir) / AGENT_SETTINGS_FILE).write_text(json.dumps(settings, indent=2, sort_keys=True))


def merge_adapter(adapter_dir: str | Path, out_dir: str | Path, base: str | None = None) -> Path:
    """Fold the LoRA adapter in `adapter_dir` into its base model (`base`, else the one the adapter
    names) and save the result, with the base's tokenizer, as a plain model directory `out_dir`."""
    from peft import PeftModel

    from workbench.models.load import load_causal_lm

    spec = base or adapter_base(adapter_dir)
    model, tokenizer, _ = load_causal_lm(spec, device=None, dtype="float32")
    merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    settings = Path(adapter_dir) / AGENT_SETTINGS_FILE
    if settings.is_file():  # the settings the adapter was trained under win over the base's
        from workbench.policies.base import AGENT_SETTINGS_KEY

        setattr(merged.config, AGENT_SETTINGS_KEY, json.loads(settings.read_text()))
    out = Path(out_dir)
    merged.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


class RoleRequest(Protocol):
    """What `RoleAdapters.train_fn` reads of a training request (`workbench.evolve.loop.TrainRequest` has it)."""

    @property
    def role(self) -> str: ...


R = TypeVar("R", bound=RoleRequest)
T = TypeVar("T")


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

    def train_fn(self, inner: Callable[[R], T]) -> Callable[[R], T]:
        """`run_drzero`'s train_fn: activate the request's role, then run `inner` (its trainer's optimizer
        then holds that role's adapter alone)."""

        def train_fn(req: R) -> T:
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


__all__ = [
    "ADAPTER_FILES",
    "AGENT_SETTINGS_FILE",
    "AdapterPolicy",
    "RoleAdapters",
    "RoleRequest",
    "adapter_base",
    "is_adapter_dir",
    "lora_config",
    "merge_adapter",
    "save_adapter_settings",
    "wrap_lora",
]
