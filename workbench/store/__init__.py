"""The trajectory store: SQLite (WAL) under a run directory, plus exports and a terminal view.

    from workbench.store import Store, RunManifest
    RunManifest.create("runs/demo", config={"group_size": 8})
    with Store("runs/demo") as store:
        store.write(traj)
        store.query(role="solver", min_reward=1.0)

Layout of a run directory: `trajectories.sqlite` (+ its `-wal`/`-shm` while open) and `run.json`.
"""

from workbench.store._rows import safe_trajectory
from workbench.store._schema import DB_NAME, STORE_SCHEMA_VERSION
from workbench.store.manifest import RunManifest
from workbench.store.show import format_run_summary, format_trajectory
from workbench.store.store import Store

__all__ = [
    "DB_NAME",
    "STORE_SCHEMA_VERSION",
    "RunManifest",
    "Store",
    "format_run_summary",
    "format_trajectory",
    "safe_trajectory",
]
