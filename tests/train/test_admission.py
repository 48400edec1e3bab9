"""Admission (`workbench.train.admission`): a table of cases, and a property test on a simulated
clock with long-tailed episode durations: every group is consumed within k versions, in FIFO
order, none dropped."""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError
from workbench.train.admission import Admission


@pytest.mark.parametrize(
    ("k", "b", "version", "started", "capacity"),
    [
        (0, 4, 0, 0, 4),  # synchronous: one step's groups
        (0, 4, 0, 4, 0),  # ... and no more until the step is done
        (0, 4, 1, 4, 4),
        (2, 4, 0, 0, 12),  # (k + v + 1)·B = 3·4
        (2, 4, 0, 11, 1),
        (2, 4, 3, 12, 12),  # (2 + 3 + 1)·4 = 24, 12 started
        (1, 1, 5, 7, 0),
    ],
)
def test_capacity_table(k, b, version, started, capacity):
    gate = Admission(k, b)
    gate.started = started
    assert gate.capacity(version) == capacity
    assert gate.may_start(version) == (capacity > 0)


def test_refused_admission_and_bad_settings_are_errors():
    gate = Admission(0, 1)
    gate.admit(0)
    with pytest.raises(RuntimeError, match="refused"):
        gate.admit(0)
    with pytest.raises(ConfigError, match="max_staleness"):
        Admission(-1, 4)
    with pytest.raises(ConfigError, match="groups per optimizer step"):
        Admission(1, 0)


def simulate(durations: list[float], k: int, b: int, workers: int, train_s: float):
    """A discrete-event run: `workers` episode slots, groups admitted while the gate allows, the
    trainer taking step v's tickets (FIFO) once all of them are done. Returns per-step tickets and
    staleness, and the trainer's idle time."""
    gate, version, clock = Admission(k, b), 0, 0.0
    running: list[tuple[float, int]] = []  # (finish time, ticket index)
    tickets, done, consumed = {}, set(), []
    steps = len(durations) // b
    idle, trainer_free_at = 0.0, 0.0
    while version < steps:
        while len(running) < workers and gate.started < len(durations) and gate.may_start(version):
            t = gate.admit(version)
            tickets[t.index] = t
            heapq.heappush(running, (clock + durations[t.index], t.index))
        need = gate.step_tickets(version)
        if all(i in done for i in need):
            idle += max(0.0, clock - trainer_free_at)
            consumed.append([(i, tickets[i].staleness(version)) for i in need])
            clock = max(clock, trainer_free_at) + train_s
            trainer_free_at = clock
            while running and running[0][0] <= clock:  # episodes that finished while it trained
                done.add(heapq.heappop(running)[1])
            version += 1
            continue
        finish, index = heapq.heappop(running)
        clock = max(clock, finish)
        done.add(index)
    return consumed, idle


@settings(max_examples=200, deadline=None)
@given(
    k=st.integers(0, 4),
    b=st.integers(1, 4),
    workers=st.integers(1, 12),
    steps=st.integers(1, 8),
    tail=st.lists(st.floats(0.01, 50.0), min_size=32, max_size=32),
    train_s=st.floats(0.1, 10.0),
)
def test_every_group_is_consumed_within_k_in_fifo_order_and_none_dropped(k, b, workers, steps, tail, train_s):
    durations = [tail[i % len(tail)] ** 2 / 10 for i in range(steps * b)]  # squared: a long tail
    consumed, _ = simulate(durations, k, b, workers, train_s)
    order = [i for batch in consumed for i, _ in batch]
    assert order == list(range(steps * b))  # FIFO, every group, none dropped
    assert all(0 <= s <= k for batch in consumed for _, s in batch)


def test_staleness_spreads_below_k_when_episodes_outlast_the_trainer_and_idles_less_than_sync():
    """Two slow groups in every four with 4 workers: with k = 2 some groups are consumed fresh and some
    one or two versions old (not pinned at k), and the trainer waits less than with k = 0."""
    durations = [1.0, 8.0, 1.0, 8.0] * 6
    consumed, idle_async = simulate(durations, k=2, b=2, workers=4, train_s=3.0)
    spread = {s for batch in consumed for _, s in batch}
    assert spread >= {0, 1} and max(spread) <= 2
    _, idle_sync = simulate(durations, k=0, b=2, workers=4, train_s=3.0)
    assert idle_async < idle_sync
