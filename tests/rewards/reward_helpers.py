"""Hand-built trajectories for reward tests."""

from workbench.trajectory import Step, Task, Trajectory


def make_traj(
    raws=(),
    *,
    golds=("Paris",),
    final=None,
    task_id="q1",
    role="solver",
    obs=None,
    meta=None,
    task_meta=None,
    host_calls=None,
    question="Where?",
) -> Trajectory:
    steps = []
    for i, raw in enumerate(raws):
        steps.append(
            Step(index=i, raw=raw, observation=(obs or {}).get(i), host_calls=list((host_calls or {}).get(i, [])))
        )
    return Trajectory(
        task=Task(task_id, question, list(golds), dict(task_meta or {})),
        steps=steps,
        final_answer=final,
        role=role,
        metadata=dict(meta or {}),
    )
