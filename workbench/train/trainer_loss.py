"""The loss side of `WorkbenchGRPOTrainer`: TRL's `_compute_loss` with per-sample upper clips (adpo), the
decoupled-PPO weights of asynchronous rollouts, and the behaviour-vs-trainer logprob gap
(`sampling/logp_gap/mean|max`), taken from the loss's own forward where it can be.

- The loss pass (and every logprob pass: old, reference, `current_logps`) scores only the trained tokens,
  in checkpointed chunks of `TrainConfig.logprob_chunk` positions (`workbench.train.logprobs`), in front of
  TRL's fused head, which on a CPU scores every position in multi-gigabyte tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from trl import GRPOTrainer

if TYPE_CHECKING:
    from workbench.train.async_trainer import AsyncTraining
    from workbench.train.config import TrainConfig


class LossTrainer(GRPOTrainer):
    """`GRPOTrainer` with workbench's loss hooks; `WorkbenchGRPOTrainer` builds on it."""

    async_training: AsyncTraining | None
    wb_config: TrainConfig
    _gap_in_loss: bool  # the loss's forward logs sampling/logp_gap (see `_log_logp_gap`)

    def _install_chunked_head(self) -> None:
        """`logprob_chunk`: the loss pass scores trained tokens in checkpointed chunks (workbench.train.logprobs),
        on the trained model and on a separate KL reference."""
        from peft import PeftModel

        from workbench.train.logprobs import install_chunked_head

        if not self.wb_config.logprob_chunk:
            return
        trained = self.model.get_base_model() if isinstance(self.model, PeftModel) else self.model
        models: list[Any] = [trained, self.ref_model]  # transformers models (torch types them Module)
        for model in models:
            if model is not None:
                install_chunked_head(model, temperature=self.temperature, chunk=self.wb_config.logprob_chunk)

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
        old = out.get("old_per_token_logps")  # TRL's (IS correction on), or π_prox (async_rollouts)
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
        if "eps_high" not in inputs:
            return self._trl_loss(model, inputs)
        low, high = self.epsilon_low, self.epsilon_high
        per_sample = inputs["eps_high"].unsqueeze(1)
        # both bounds must be tensors for torch.clamp; TRL types them float
        self.epsilon_high = per_sample
        self.epsilon_low = torch.full_like(per_sample, float(low))  # type: ignore[assignment]
        try:
            return self._trl_loss(model, inputs)
        finally:
            self.epsilon_low, self.epsilon_high = low, high

    def _trl_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        decoupled = self.async_training is not None and "importance_sampling_ratio" in inputs
        loglinear = decoupled and "behaviour_versions" in inputs  # π_prox from this forward's own logprobs
        gap = self._gap_in_loss and "sampling_per_token_logps" in inputs
        if loglinear or gap:
            self._get_per_token_logps_and_entropies = self._loss_forward(inputs, loglinear, gap)  # type: ignore[method-assign]
        # decoupled PPO: TRL multiplies each token's surrogate by `importance_sampling_ratio` (here the capped
        # behaviour weight) on its vLLM path only; these two flags are read nowhere else in its loss
        flags = (self.use_vllm, self.vllm_importance_sampling_correction)
        if decoupled:
            self.use_vllm = self.vllm_importance_sampling_correction = True
        try:
            loss: torch.Tensor = super()._compute_loss(model, inputs)  # type: ignore[no-untyped-call]  # unannotated in TRL
        finally:
            self.use_vllm, self.vllm_importance_sampling_correction = flags
            self.__dict__.pop("_get_per_token_logps_and_entropies", None)
        return loss

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
                assert self.async_training is not None
                self.async_training.approximate_prox(inputs, result[0])
            return result

        return forward_then_use


__all__ = ["LossTrainer"]
