"""`workbench show RUN_DIR [TRAJ_ID]`: a run's table of trajectories, or one trajectory in full."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("show", help="print a run's trajectories or one trajectory", description=__doc__)
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory holding trajectories.sqlite")
    p.add_argument(
        "traj_id", metavar="TRAJ_ID", nargs="?", help="trajectory id or a unique prefix of it; omit for the run summary"
    )
    p.add_argument("--role", help="summary: only this role (e.g. solver, proposer)")
    p.add_argument("--limit", type=int, default=50, help="summary: newest N rows (0 = all)")
    p.add_argument("--full", action="store_true", help="trajectory: do not truncate long text")
    p.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from workbench.store.show import format_run_summary, format_trajectory
    from workbench.store.store import Store

    with Store.open_readonly(args.run_dir) as store:
        if args.traj_id:
            traj = store.get(store.resolve_id(args.traj_id))
            print(format_trajectory(traj, limit=0 if args.full else 600))
        else:
            print(format_run_summary(store, limit=args.limit or None, role=args.role))
    return 0
