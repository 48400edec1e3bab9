"""A writer process for the crash and concurrency tests: writes trajectories in a loop and prints
each id to stdout only after `Store.write` has returned (i.e. committed)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from store_helpers import make_trajectory

from workbench.store import Store


def main(run_dir: str, start: int, count: int, pause: float) -> None:
    store = Store(run_dir)
    for i in range(start, start + count):
        traj = make_trajectory(i, steps=1 + i % 6, hops=i % 4, reward=(i % 5) / 4)
        store.write(traj)
        store.log_metrics("run-a", i, {"loss": 1.0 / (i + 1), "reward_mean": (i % 5) / 4})
        print(traj.id, flush=True)
        time.sleep(pause)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
