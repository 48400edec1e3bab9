"""The loss side of `WorkbenchGRPOTrainer`: TRL's `_compute_loss` with per-sample upper clips (adpo), the
decoupled-PPO weights of overlapped training (`ProxCorrection`), and the behaviour-vs-trainer logprob gap
(`sampling/logp_gap/mean|max`), taken from the loss's own forward where it can be.

- What the loss changes in TRL's state for one call (`_loss_settings`) is set in one place,
  `trl_attributes`, and restored however the call ends.

- The loss pass (and every logprob pass: old, reference, `current_logps`) scores only the trained tokens,
  in checkpointed chunks of `TrainConfig.logprob_chunk` positions (`workbench.train.logprobs`), in front of
  TRL's fused head, which on a CPU scores every position in multi-gigabyte tiles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import torch
from trl import GRPOTrainer

from workbench.train import advantages as A
from workbench.train.estimators import Advantages

if TYPE_CHECKING:
    from accelerate import Accelerator


class ProxCorrection(Protocol):
    """The loss correction of overlapped training (`workbench.train.overlap.OverlappedTraining` is one)."""

    def approximate_prox(self, inputs: dict[str, Any], logp: torch.Tensor) -> None:
        """Fill `inputs`' π_prox and behaviour weight from the loss forward's logprobs `logp`
        (`prox="loglinear"`), before TRL's loss reads them."""
        ...


@contextmanager
def trl_attributes(trainer: GRPOTrainer, **values: Any) -> Iterator[None]:
    """TRL's attributes (or a method, bound on the instance) set to `values` for one call, then restored
    however the call ends: the one place workbench assigns TRL's state. A name the instance did not hold
    (a method of its class) is removed again."""
    held = vars(trainer)
    saved = {name: held[name] for name in values if name in held}
    try:
        for name, value in values.items():
            setattr(trainer, name, value)
        yield
    finally:
        for name in values:
            if name in saved:
                setattr(trainer, name, saved[name])
            else:
                held.pop(name, None)


def place_advantages(out: dict[str, Any], rows: Advantages, accelerator: Accelerator) -> None:
    """What TRL's loss reads of the estimator's row advantages (`rows.row_advantages`) into `out`: the values
    (whitened over every loss token of the global batch when `token_whiten`), rows not kept out of `tool_mask`
    and the token count, and per-row upper clips (`eps_high`, read by `LossTrainer._loss_settings`)."""
    from accelerate.utils import gather_object

    device = out["advantages"].device
    adv = rows.values
    if rows.keep is not None:  # rows of dropped trajectories (asearcher's flat groups) leave the loss
        keep = rows.keep.to(device)
        out["tool_mask"] = out["tool_mask"] * keep.unsqueeze(1).to(out["tool_mask"].dtype)
        tokens = (out["completion_mask"] * out["tool_mask"]).sum(dim=1)
        out["num_items_in_batch"] = accelerator.gather(tokens.sum()).sum()
    if rows.token_whiten:  # whitened over every loss token of the global batch
        tokens = (out["completion_mask"] * out["tool_mask"]).sum(dim=1)
        values = gather_object(adv.tolist())
        counts = gather_object(tokens.tolist())
        start = sum(gather_object([len(adv)])[: accelerator.process_index])
        adv = A.token_whiten(values, counts)[start : start + len(adv)]
        if rows.keep is not None:
            adv = adv * rows.keep
    out["advantages"] = adv.to(device)
    if rows.eps_high is not None:
        out["eps_high"] = rows.eps_high.to(device)


class LossTrainer(GRPOTrainer):
    """`GRPOTrainer` with workbench's loss hooks; `WorkbenchGRPOTrainer` builds on it."""

    prox_correction: ProxCorrection | None = None  # overlapped training's correction (the run overlaps)
    _gap_in_loss = False  # the loss's forward logs sampling/logp_gap (see `_log_logp_gap`)

    def _install_chunked_head(self, chunk: int) -> None:
        """`TrainConfig.logprob_chunk`: the loss pass scores trained tokens in checkpointed chunks of `chunk`
        positions (workbench.train.logprobs), on the trained model and on a separate KL reference."""
        from peft import PeftModel

        from workbench.train.logprobs import install_chunked_head

        if not chunk:
            return
        trained = self.model.get_base_model() if isinstance(self.model, PeftModel) else self.model
        models: list[Any] = [trained, self.ref_model]  # transformers models (torch types them Module)
        for model in models:
            if model is not None:
                install_chunked_head(model, temperature=self.temperature, chunk=chunk)

    @property
    def _training(self) -> bool:
        """Whether the model is in training mode (generation for an optimizer step, not evaluation)."""
        return self.model is not None and self.model.training

    def current_logps(self, out: dict[str, Any]) -> torch.Tensor:
        """Per-token logprobs of a generation batch's completions under the current weights (no grad)."""
        ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
        attn = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        with torch.no_grad():
            logps: torch.Tensor
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model, ids, attn, out["completion_ids"].size(1), batch_size=self.args.per_device_train_batch_size
            )
        return logps

    def _log_logp_gap(self, out: dict[str, Any]) -> None:
        """Behaviour (sampling) vs trainer logprobs over model tokens: `sampling/logp_gap/mean|max`.

        With TRL's old logprobs (IS correction on, or several iterations a batch) the gap is logged
        here; otherwise the loss's own forward gives it (`_gap_in_loss`): the batch was sampled from
        the weights the loss runs with, and a pass over every row only for a metric cost as much as
        the reference pass."""
        sampling = out.get("sampling_per_token_logps")
        if sampling is None:
            return
        old = out.get("old_per_token_logps")  # TRL's (IS correction on), or π_prox (overlapped training)
        self._gap_in_loss = old is None and self._training
        if old is None and not self._training:  # evaluation: no loss pass follows
            old = self.current_logps(out)
        if old is not None:
            self._record_logp_gap(old, out)

    def _record_logp_gap(self, old: torch.Tensor, out: dict[str, Any]) -> None:
        sampling = out["sampling_per_token_logps"]
        mask = out["completion_mask"].bool()
        if out.get("tool_mask") is not None:
            mask = mask & out["tool_mask"].bool()
        delta = (old - sampling).abs()[mask]
        delta = delta[~torch.isnan(delta)]
        zero = torch.zeros((), device=old.device)
        mean = delta.mean() if delta.numel() else zero
        high = delta.max() if delta.numel() else zero
        metrics = self._metrics["train" if self._training else "eval"]
        metrics["sampling/logp_gap/mean"].append(self.accelerator.gather(mean).mean().item())
        metrics["sampling/logp_gap/max"].append(self.accelerator.gather(high).max().item())

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        with trl_attributes(self, **self._loss_settings(inputs)):
            loss: torch.Tensor = super()._compute_loss(model, inputs)  # type: ignore[no-untyped-call]  # unannotated in TRL
        return loss

    def _loss_settings(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """What TRL's loss runs with for `inputs`, beyond its own settings: per-sample clips (adpo's
        `eps_high`), decoupled PPO's behaviour weight, and a forward that also feeds the logprob gap or
        `approximate_prox`."""
        settings: dict[str, Any] = {}
        if "eps_high" in inputs:  # both bounds must be tensors for torch.clamp; TRL types them float
            per_sample = inputs["eps_high"].unsqueeze(1)
            settings.update(epsilon_high=per_sample, epsilon_low=torch.full_like(per_sample, float(self.epsilon_low)))
        decoupled = self.prox_correction is not None and "importance_sampling_ratio" in inputs
        loglinear = decoupled and "behaviour_versions" in inputs  # π_prox from this forward's own logprobs
        gap = self._gap_in_loss and "sampling_per_token_logps" in inputs
        if loglinear or gap:
            settings["_get_per_token_logps_and_entropies"] = self._loss_forward(inputs, loglinear, gap)
        if decoupled:  # TRL multiplies each token's surrogate by `importance_sampling_ratio` (here the capped
            # behaviour weight) on its vLLM path only; these two flags are read nowhere else in its loss
            settings.update(use_vllm=True, vllm_importance_sampling_correction=True)
        return settings

    def _loss_forward(self, inputs: dict[str, Any], loglinear: bool, gap: bool) -> Callable[..., Any]:
        """TRL's per-token logprob pass, then on its result: the behaviour-vs-trainer gap (`gap`, one
        entry per micro-batch) and `approximate_prox` (`loglinear`, before the loss reads
        `old_per_token_logps` and `importance_sampling_ratio` from `inputs`)."""
        forward = type(self)._get_per_token_logps_and_entropies

        def forward_then_use(*args: Any, **kwargs: Any) -> Any:
            result = forward(self, *args, **kwargs)
            if gap:
                self._record_logp_gap(result[0].detach(), inputs)
            if loglinear:
                assert self.prox_correction is not None
                self.prox_correction.approximate_prox(inputs, result[0])
            return result

        return forward_then_use


__all__ = ["LossTrainer", "ProxCorrection", "place_advantages", "trl_attributes"]
