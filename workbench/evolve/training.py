"""The default training hook: each `TrainRequest` becomes one `workbench.train.train(...)` run.

    from workbench.evolve import run_drzero, trl_train_fn
    from workbench.train import TrainConfig

    train_fn = trl_train_fn(TrainConfig(max_steps=2, num_generations=2, per_device_train_batch_size=4),
                            proposer=(model, tokenizer), solver=(model, tokenizer))   # one model, both roles
    run_drzero(cfg, proposer_policy=TransformersPolicy.from_model(model, tokenizer), shared_model=True, ...,
               train_fn=train_fn)

A role with no model (e.g. a scripted proposer) is skipped. Models train in place, so policies made
with `TransformersPolicy.from_model(model, tok)` sample from the updated weights next iteration; the
weights of each update are also saved to `<run>/iter_<i>/<role>/final` (the iteration's checkpoint).
Each role's group size (`EvolveConfig.proposer_group_size` / `solver_group_size`, e.g. Dr. Zero's
solver n = 5) becomes its `num_generations` (an estimator with a `group_key`, hrpo, samples one per
prompt and ignores it), with the micro-batch rounded up to whole groups, unless an override names
`num_generations`.
Per-role `TrainConfig` overrides go in `overrides={"proposer": {...}, "solver": {...}}`; per-role
rewards in `rewards={"solver": my_reward}` (a `.score(traj)` object or a callable) replace the
mode's (solver: exact match against the QA target; proposer: the mode's online proposer reward).
"""

from __future__ import annotations

from typing import Any

from workbench.errors import ConfigError


def trl_train_fn(
    config: Any,
    *,
    proposer: tuple[Any, Any] | None = None,
    solver: tuple[Any, Any] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    rewards: dict[str, Any] | None = None,
) -> Any:
    """A `train_fn` for `run_drzero` / `run_agent0` that trains through `workbench.train.train`."""
    models = {"proposer": proposer, "solver": solver}
    overrides, rewards = dict(overrides or {}), dict(rewards or {})
    bad = (set(overrides) | set(rewards)) - set(models)
    if bad:
        raise ConfigError(f"trl_train_fn: unknown role(s) {sorted(bad)}; use 'proposer' and 'solver'")
    if proposer is None and solver is None:
        raise ConfigError("trl_train_fn needs proposer=(model, tokenizer) and/or solver=(model, tokenizer)")

    def train_fn(request: Any) -> dict[str, Any] | None:
        pair = models.get(request.role)
        if pair is None:
            return None
        from workbench.train.estimators import estimator_class
        from workbench.train.run import train

        model, tokenizer = pair
        role_overrides = dict(overrides.get(request.role, {}))
        group = getattr(request, "group_size", 0)
        grouped_by_task = estimator_class(request.estimator).group_key is None  # hrpo: one rollout per task
        if group >= 2 and grouped_by_task and "num_generations" not in role_overrides:
            # the mode's group size; the micro-batch rounded up to hold whole groups
            batch = role_overrides.get("per_device_train_batch_size", config.per_device_train_batch_size)
            role_overrides.update(num_generations=group, per_device_train_batch_size=-(-batch // group) * group)
        cfg = config.replace(
            estimator=request.estimator,
            output_dir=str(request.output_dir),
            run_id=f"{request.run_id}/{request.role}",
            store_path="",
            episode_kind="nbagent",
            **role_overrides,
        )
        summary = train(
            cfg,
            tasks=request.tasks,
            episodes=request.episodes,
            model=model,
            tokenizer=tokenizer,
            reward=rewards.get(request.role, request.reward),
            store=request.store,
        )
        return {**summary, "estimator": request.estimator, "tasks": len(request.tasks)}

    return train_fn


__all__ = ["trl_train_fn"]
