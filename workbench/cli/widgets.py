"""`workbench report RUN_DIR [--out FILE.html]`: the run's plots as one offline HTML file."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("report", help="write a run's dashboards as standalone HTML", description=__doc__)
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory holding trajectories.sqlite")
    p.add_argument("--out", metavar="FILE.html", help="where to write (default RUN_DIR/report.html)")
    p.add_argument("--title", help="page title (default: the run directory's name)")
    p.add_argument(
        "--pass-threshold",
        type=float,
        default=0.5,
        help="a rollout passes when its total reward is at least this (default 0.5)",
    )
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from workbench.widgets.report import write_report

    path = write_report(args.run_dir, args.out, title=args.title, pass_threshold=args.pass_threshold)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB; opens offline)")
    return 0
