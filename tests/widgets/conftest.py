"""Widget tests run headless: the comm layer is swapped for a recording DummyComm (the pattern of
ipywidgets' own tests), and runs are real SQLite stores filled with schema-true trajectories."""

from __future__ import annotations

import base64
from pathlib import Path

import comm
import ipywidgets.widgets.widget as widget_module
import pytest
from ipywidgets import Widget

from workbench.store import Store
from workbench.trajectory import HostCall, Step, Task, Trajectory

# a 1x1 PNG, as a kernel's display_data would carry it
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a3b0b1f90000000049454e44ae426082"
    )
).decode()


class DummyComm:
    """Records what a widget would send to the front end."""

    comm_id = "a-b-c-d"
    kernel = "Truthy"

    def __init__(self, *args, **kwargs) -> None:
        self.messages: list[tuple] = []

    def open(self, *args, **kwargs) -> None:
        pass

    def on_msg(self, *args, **kwargs) -> None:
        pass

    def send(self, *args, **kwargs) -> None:
        self.messages.append((args, kwargs))

    def close(self, *args, **kwargs) -> None:
        pass


@pytest.fixture(autouse=True)
def dummy_comm(monkeypatch):
    monkeypatch.setattr(comm, "create_comm", lambda **kw: DummyComm())
    monkeypatch.setattr(comm, "get_comm_manager", lambda **kw: {})
    monkeypatch.setattr(Widget.comm, "klass", DummyComm, raising=False)
    monkeypatch.setattr(widget_module, "Comm", DummyComm, raising=False)
    yield


def sent_states(widget) -> list[dict]:
    """The state updates a widget sent through its comm."""
    assert isinstance(widget.comm, DummyComm), "the DummyComm fixture is not in place"
    msgs = [kwargs.get("data", args[0] if args else None) for args, kwargs in widget.comm.messages]
    return [m["state"] for m in msgs if isinstance(m, dict) and m.get("method") == "update"]


def make_trajectory(
    i: int,
    *,
    role: str = "solver",
    hops: int = 2,
    reward: float | None = 1.0,
    termination: str = "submitted",
    origin: str | None = None,
    run_id: str = "run-a",
    steps: int = 3,
    policy: str = "scripted",
    traj_id: str | None = None,
) -> Trajectory:
    """A trajectory shaped like a real rollout: each step adds a notepad fact and changes a plan."""
    task = Task(
        id=f"task-{i}",
        question=f"Who founded the city that hosts museum #{i}?",
        golden_answers=[f"Founder {i}"],
        metadata={"hops": hops},
    )
    traj = Trajectory(
        task=task,
        run_id=run_id,
        role=role,
        termination=termination,
        lineage={"policy": policy, **({"origin": origin} if origin else {})},
        started_at=1_700_000_000.0 + i,
        ended_at=1_700_000_005.0 + i,
        **({"id": traj_id} if traj_id else {}),
    )
    for s in range(steps):
        outputs = [{"output_type": "stream", "name": "stdout", "text": f"result {s} for museum {i}\n"}]
        if s == 1:
            outputs.append({"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"}})
        notepad = {"facts": [f"fact {k}" for k in range(s + 1)], "plan": f"plan v{s // 2}"}
        if s == 0:
            notepad["scratch"] = "temporary"
        traj.steps.append(
            Step(
                index=s,
                raw=f"<think>step {s}</think><code>x_{s} = search('museum {i}')</code>",
                think=f"I should look up museum {i}, step {s}.",
                code=f"x_{s} = search('museum {i}')",
                observation={"outputs": outputs, "truncated": s == 2},
                observation_text=f"result {s} for museum {i}",
                notepad=notepad,
                host_calls=[
                    HostCall(name="search", arguments={"query": f"museum {i}"}, result=[f"doc {s}"], duration_s=0.01)
                ],
                prompt_ids=list(range(30)) if s == 0 else None,
                completion_ids=list(range(40 + s)),
                observation_ids=list(range(20)),
                finish_reason="stop",
                generate_s=0.5,
                execute_s=0.1,
            )
        )
    traj.final_answer = f"Founder {i}"
    if reward is not None:
        traj.rewards = {"outcome": reward, "format": 0.1, "total": reward}
        traj.reward_spec = "em"
    return traj


def fill_run(run_dir: Path) -> dict[str, list[str]]:
    """A small evolve-like run: 2 proposers, 3 solver attempts each, plus loose solver rollouts."""
    ids: dict[str, list[str]] = {"proposer": [], "solver": [], "loose": []}
    with Store(run_dir) as store:
        for p in range(2):
            prop = make_trajectory(
                100 + p, role="proposer", hops=p + 1, reward=0.5 + 0.25 * p, traj_id=f"prop{p:04d}" + "0" * 24
            )
            prop.metadata = {"iteration": 1, "hops": p + 1}
            store.write(prop)
            ids["proposer"].append(prop.id)
            for k in range(3):
                sol = make_trajectory(
                    10 * p + k,
                    hops=p + 1,
                    reward=float(k % 2),
                    origin=prop.id,
                    termination="submitted" if k else "max_steps",
                )
                store.write(sol)
                ids["solver"].append(sol.id)
        for j in range(3):
            loose = make_trajectory(50 + j, hops=3, reward=0.25 * j, run_id="run-b", policy="tiny")
            store.write(loose)
            ids["loose"].append(loose.id)
    return ids


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, dict[str, list[str]]]:
    run_dir = tmp_path / "run"
    return run_dir, fill_run(run_dir)


@pytest.fixture
def make_traj():
    return make_trajectory


@pytest.fixture
def states():
    return sent_states
