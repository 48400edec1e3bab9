"""Overlapped training: what `TrainConfig(async_rollouts=True)` adds to `WorkbenchGRPOTrainer`.

    trainer = WorkbenchGRPOTrainer(model, tok, tasks, episodes=..., config=TrainConfig(async_rollouts=True,
                                                                                     max_staleness=2))
    trainer.train()          # rollouts of step v+1 … v+k play while step v trains

"Overlapped" is asynchronous RL (docs/glossary.md; "async" names asyncio APIs). `OverlappedTraining`
sees its trainer through `OverlapHost` alone, the Protocol below: the trainer hands itself in, and
nothing here reads its other state.

- The rollouts sample from a copy of the model, or with `use_vllm` from the colocated vLLM engine
  (`VersionedPolicy`): after every optimizer step the trainer publishes its weights and the copy (the
  engine) loads them at the next turn boundary; each turn records the version that sampled it
  (`Step.policy_version`), each trajectory its start version.
- The producer (`EpisodeProducer`) draws its tasks in the order of the trainer's own sampler
  (`OverlapHost.task_order`), as the synchronous trainer would, one optimizer step's batch per wave (on
  several processes, each rank's producer runs the slice of the batch its dataloader shard would get);
  admission keeps every wave within `max_staleness` steps of the step that trains on it, and none is dropped.
- The loss is decoupled PPO (`workbench.train.decoupled`): π_prox is the trainer's policy when the
  step's update begins (recomputed by one no-grad forward; or, with `prox="loglinear"`, interpolated
  in the loss by each token's version, AReaL's approximation), and TRL's loss multiplies each token's
  clipped surrogate by the capped behaviour weight π_prox/π_behav, over the original mask. This is
  TRL's importance-sampling path, so it composes with every estimator's advantages and with LoRA.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import torch

from workbench.contracts import EpisodeRunner
from workbench.errors import ConfigError
from workbench.policies.base import Policy
from workbench.train.admission import Admission
from workbench.train.config import TrainConfig
from workbench.train.decoupled import behaviour_weights, loglinear_prox
from workbench.train.episode_producer import EpisodeProducer, VersionedWeights
from workbench.trajectory import Task, Trajectory

if TYPE_CHECKING:
    from workbench.policies.vllm_colocated import ColocatedVLLMPolicy


class OverlapHost(Protocol):
    """What `OverlappedTraining` needs from the trainer it runs beside (`WorkbenchGRPOTrainer` is one)."""

    @property
    def wb_config(self) -> TrainConfig: ...

    @property
    def episodes(self) -> EpisodeRunner[Policy]: ...

    @property
    def policy_version(self) -> int:
        """The version of the weights the trainer holds: optimizer steps done."""
        ...

    def live_model(self) -> torch.nn.Module:
        """The model being trained (unwrapped from its accelerator wrapper)."""
        ...

    def sampling_policy(self, model: torch.nn.Module, seed: int) -> Policy:
        """A policy sampling from `model` (the rollout copy) with `seed`, with the trainer's tokenizer."""
        ...

    def task_order(self) -> Iterator[Task]:
        """The training tasks in the order the trainer's sampler gives them, epoch after epoch."""
        ...

    def current_logps(self, out: dict[str, Any]) -> torch.Tensor:
        """Per-token logprobs of a generation batch's completions under the current weights (no grad)."""
        ...

    def log_metric(self, name: str, value: float) -> None:
        """Add `value` to this step's training metric `name`."""
        ...


def check_one_update_per_batch(
    num_iterations: int, steps_per_generation: int | None, gradient_accumulation: int
) -> None:
    """A ConfigError naming the fix unless each rollout batch trains in exactly one optimizer step."""
    if num_iterations != 1 or steps_per_generation != gradient_accumulation:
        raise ConfigError(
            "async_rollouts trains each rollout batch in exactly one optimizer step: keep num_iterations=1 "
            "and steps_per_generation equal to gradient_accumulation_steps"
        )


def colocated_engine(vllm_generation: Any) -> ColocatedVLLMPolicy:
    """The engine overlapped rollouts sample from with `use_vllm`: the process's colocated one in TRL's
    `vllm_generation` (a ConfigError naming the fix in server mode)."""
    llm = getattr(vllm_generation, "llm", None)
    if llm is None:
        raise ConfigError("async_rollouts with use_vllm needs the colocated engine: vllm_mode='colocate', one process")
    from workbench.policies.vllm_colocated import ColocatedVLLMPolicy

    return ColocatedVLLMPolicy(llm)


class OverlappedTraining:
    """The producer, the rollout copy and the loss correction of one overlapped run.

    `rows_per_step` is every process's rows of one optimizer step (TRL's generation batch), `group_size`
    the rollouts per question; this process (`rank` of `ranks`) produces its slice of each step's batch.
    `engine` is the colocated vLLM engine to sample from (else a copy of the live model); `finish` scores
    each trajectory as it comes back."""

    def __init__(
        self,
        host: OverlapHost,
        *,
        rows_per_step: int,
        group_size: int,
        ranks: int = 1,
        rank: int = 0,
        engine: ColocatedVLLMPolicy | None = None,
        finish: Callable[[Trajectory], None] = lambda t: None,
    ) -> None:
        self.host, self.config, self.engine = host, host.wb_config, engine
        self.rollout_model = None if engine is not None else copy.deepcopy(host.live_model()).eval()
        self.weights = VersionedWeights(self._load)
        share = rows_per_step // ranks  # this process's rows: the slice its dataloader shard would get
        self.admission = Admission(self.config.max_staleness, max(share // group_size, 1))
        self._batches = (
            batch[rank * share : (rank + 1) * share] for batch in _in_batches(host.task_order(), rows_per_step)
        )
        self.producer = EpisodeProducer(
            host.episodes, self._wave_policy, self.admission, lambda: next(self._batches), finish
        )
        self.started = False
        self.staleness: list[int] = []

    def _load(self, weights: dict[str, torch.Tensor]) -> None:
        """Published weights into the rollout side (at a turn boundary: no turn is generating)."""
        if self.engine is not None:
            from workbench.policies.vllm_colocated import load_weights

            load_weights(self.engine.llm, weights.items())
        else:
            assert self.rollout_model is not None
            self.rollout_model.load_state_dict(weights)

    def _live_weights(self) -> dict[str, torch.Tensor]:
        """A copy of the trainer's weights now: the state dict for the rollout copy, the parameters by
        checkpoint name for vLLM (what its loader reads)."""
        live = self.host.live_model()
        named = live.named_parameters() if self.engine is not None else live.state_dict().items()
        return {k: v.detach().clone() for k, v in named}

    def _wave_policy(self, seed: int) -> Policy:
        """One wave's policy behind the weights' gate: the rollout copy sampling from `seed`, or the
        colocated vLLM engine (its requests carry their own seeds)."""
        if self.engine is not None:
            return self.weights.policy(self.engine)
        assert self.rollout_model is not None
        return self.weights.policy(self.host.sampling_policy(self.rollout_model, seed))

    def collect(self, version: int) -> list[Trajectory]:
        """Step `version`'s trajectories, scored (the producer starts on the first call)."""
        if not self.started:
            self._start(version)
        waited = time.perf_counter()
        trajs, wave = self.producer.take(version, self.config.async_timeout_s)
        waited = time.perf_counter() - waited
        stale = version - wave.version
        self.staleness.append(stale)
        log = self.host.log_metric
        log("async/trainer_wait_s", waited)
        log("async/staleness/mean", float(stale))
        log("async/staleness/max", float(max(self.staleness)))
        versions = [s.policy_version for t in trajs for s in t.steps if s.policy_version is not None]
        if versions:
            log("async/turn_staleness/mean", version - statistics.fmean(versions))
            for lag in range(self.admission.max_staleness + 1):  # the histogram: share of turns `lag` steps old
                log(f"async/turn_staleness/share_{lag}", sum(version - v == lag for v in versions) / len(versions))
        log("async/groups_dropped", 0.0)
        log("async/producer_blocked_s", self.producer.blocked_seconds)
        return trajs

    def _start(self, version: int) -> None:
        """Start producing at the trainer's `version`: 0 on a fresh run, a checkpoint's global step on
        resume. The rollout copy takes the weights the trainer holds now (a checkpoint's, on resume, which
        TRL loads after this object was built), admission counts the groups of the steps already trained,
        and the task stream skips their batches, so step `version` trains on the tasks an uninterrupted
        run would. Groups that were in flight when the checkpoint was written are generated again (same
        tasks, new samples; their earlier trajectories stay in the store, stamped with their versions)."""
        self._load(self._live_weights())
        self.weights.version = self.producer.version = version
        self.admission.started = version * self.admission.groups_per_step
        for _ in range(version):
            next(self._batches)
        # each wave's seed is drawn here, where the synchronous trainer draws its policy's
        self.producer.start([_draw_seed() for _ in range(self.admission.max_staleness + 1)])
        self.started = True

    def publish(self, version: int) -> None:
        """After optimizer step `version`: the weights to the rollout copy, then more admission."""
        t0 = time.perf_counter()
        self.weights.publish(version, self._live_weights())
        self.producer.set_version(version, _draw_seed())
        self.host.log_metric("async/weight_publish_s", time.perf_counter() - t0)  # the trainer's copy of its weights
        if self.weights.sync_seconds:
            self.host.log_metric("async/weight_sync_s", self.weights.sync_seconds[-1])  # the rollout copy's load

    def correct(
        self, out: dict[str, Any], trajs: list[Trajectory], row_traj: list[int], step_index: list[list[int]]
    ) -> None:
        """The loss correction's inputs. `recompute`: π_prox by one no-grad forward, and the capped behaviour
        weight for TRL's loss, with its metrics. `loglinear`: each token's policy version (`token_versions`
        of the rows' trajectories and turns), for `approximate_prox` once the loss has the current logprobs."""
        behav = out.get("sampling_per_token_logps")
        if behav is None:
            raise ConfigError("async_rollouts needs the rollouts' logprobs; the episode runner recorded none")
        if self.config.prox == "loglinear":
            versions = token_versions(trajs, row_traj, step_index, out["completion_ids"].size(1))
            out["behaviour_versions"] = versions.to(behav.device)
            out["importance_sampling_ratio"] = torch.ones_like(behav)  # replaced in the loss
            return
        prox = self.host.current_logps(out)
        out["old_per_token_logps"], out["importance_sampling_ratio"] = self._weigh(prox, behav, _loss_mask(out))

    def approximate_prox(self, inputs: dict[str, Any], logp: torch.Tensor) -> None:
        """`prox="loglinear"`, in the loss once its forward has `logp`: log π_prox interpolated between the
        behaviour and current logprobs by each token's version (`decoupled.loglinear_prox`, v_θ the version
        this update makes, v_prox = v_θ - 1 the weights it starts from), then the capped behaviour weight.
        No forward pass of its own (AReaL measured 1.27x faster at equal reward)."""
        behav = inputs["sampling_per_token_logps"]
        behav = torch.where(torch.isnan(behav), logp.detach(), behav)
        prox = loglinear_prox(behav, logp, inputs["behaviour_versions"], self.host.policy_version + 1)
        inputs["old_per_token_logps"], inputs["importance_sampling_ratio"] = self._weigh(
            prox, behav, _loss_mask(inputs)
        )

    def _weigh(self, prox: torch.Tensor, behav: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(π_prox, the capped weight π_prox/π_behav) for TRL's loss; the weight's statistics as metrics.
        Tokens without a behaviour logprob get weight 1."""
        behav = torch.where(torch.isnan(behav), prox, behav)
        weight, stats = behaviour_weights(
            prox,
            behav,
            mask,
            cap=self.config.behaviour_weight_cap,
            cap_action=self.config.behaviour_cap_action,  # type: ignore[arg-type]
        )
        log = self.host.log_metric
        log("async/behaviour_weight/mean", stats.behaviour_weight_mean)
        log("async/behaviour_weight/max", stats.behaviour_weight_max)
        log("async/capped_fraction", stats.capped_fraction)
        log("async/mismatch_kl", stats.mismatch_kl)
        return prox, weight

    def close(self) -> None:
        self.producer.close()


def _loss_mask(batch: dict[str, Any]) -> torch.Tensor:
    """The tokens TRL's loss counts: completion tokens that are not tool observations."""
    mask: torch.Tensor = batch["completion_mask"]
    tools: torch.Tensor = batch.get("tool_mask", torch.ones_like(mask))
    return mask * tools


def token_versions(
    trajs: list[Trajectory], row_traj: list[int], step_index: list[list[int]], width: int
) -> torch.Tensor:
    """(rows, width) policy version of each completion token: its turn's `Step.policy_version`, -1 for
    observation and padding tokens (and filler rows, `row_traj` -1)."""
    out = torch.full((len(row_traj), width), -1, dtype=torch.long)
    for row, (j, turns) in enumerate(zip(row_traj, step_index, strict=True)):
        if j < 0:
            continue
        versions = [s.policy_version for s in trajs[j].steps]
        for pos, turn in enumerate(turns[:width]):
            version = versions[turn] if turn >= 0 else None
            if version is not None:
                out[row, pos] = version
    return out


def _draw_seed() -> int:
    """A sampling seed from the global RNG: the draw `TransformersPolicy.from_model` makes for itself."""
    return int(torch.randint(0, 1 << 62, (1,)))


def _in_batches(tasks: Iterator[Task], size: int) -> Iterator[list[Task]]:
    """`tasks` in consecutive batches of `size`: the tasks of each generation batch, what the
    synchronous trainer would train on at each step."""
    batch: list[Task] = []
    for task in tasks:
        batch.append(task)
        if len(batch) == size:
            yield batch
            batch = []


__all__ = ["OverlapHost", "OverlappedTraining", "check_one_update_per_batch", "colocated_engine", "token_versions"]
