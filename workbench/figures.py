"""Measured figures as records: one JSON line per figure, with what produced it and where.

    log = FigureLog("bench_store", mode="smoke")
    log.record("insert 1k trajectories", 0.84, "s", target="<= 2 s")
    # -> appends one line to bench/results/bench_store.jsonl:
    # {"bench": "bench_store", "name": "insert 1k trajectories", "value": 0.84, "unit": "s", "target": "<= 2 s",
    #  "baseline": null, "ok": null, "mode": "smoke", "command": ["python", "bench/bench_store.py", "--smoke"],
    #  "commit": "6f246da…+dirty", "machine": {"cpu": "…", "cores": 2, "load": 1.3}, "date": "2026-12-06T07:30:00Z"}

Every `bench/bench_*.py` records each figure it prints (through `bench/_util.py`), the demo records its
summary (`record_demo_summary`), and `scripts/render_figures.py` renders `docs/results.md` and
`docs/benchmarks.md` from the records: figures live apart from prose.

Where records go: `$WORKBENCH_RESULTS_DIR` when set; else `bench/results/` of the checkout this module
sits in; else (an installed package, or a pytest run that set no directory) nowhere, so tests never
write into the repository. `mode` says what sizes ran: "full", "quick" (fewer repetitions) or "smoke"
(tiny sizes that check the code runs; their figures mean nothing).
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

RESULTS_ENV = "WORKBENCH_RESULTS_DIR"
REPO = Path(__file__).resolve().parents[1]
Mode = Literal["full", "quick", "smoke"]
MODES: tuple[Mode, ...] = ("full", "quick", "smoke")
_BENCH_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Machine:
    """Where a figure was measured: the CPU model, the cores this process may use, the 1-min load at start."""

    cpu: str
    cores: int
    load: float

    @classmethod
    def here(cls) -> Machine:
        """This machine, now (`load` is `os.getloadavg()[0]`)."""
        cpu = "unknown"
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                    cpu = " ".join(value.split())
                    break
        except OSError:
            pass
        if cpu == "unknown":  # e.g. aarch64 names no model in /proc/cpuinfo
            cpu = platform.processor() or platform.machine() or "unknown"
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0
        return cls(cpu=cpu, cores=cores, load=round(os.getloadavg()[0], 2))

    @property
    def label(self) -> str:
        """The machine's identity for "latest per machine": the CPU model and cores (not the load)."""
        return f"{self.cpu}, {self.cores} cores"


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One measured figure and its provenance; one JSON line in `<results dir>/<bench>.jsonl`.

    `value` is None for a figure that came out not finite (JSON has no NaN). `target` is the goal as text
    ("<= 5 ms", ">= 20"), `ok` its verdict where the bench judged it, `baseline` the value a ratio is taken
    against in the same run. `command` is the argv that ran, `commit` `git rev-parse HEAD` (with "+dirty" when
    tracked files outside the results differ, "unknown" outside a checkout), `date` UTC ISO 8601.
    """

    bench: str
    name: str
    value: float | None
    unit: str
    target: str = ""
    baseline: float | None = None
    ok: bool | None = None
    mode: Mode = "full"
    command: tuple[str, ...]
    commit: str
    machine: Machine
    date: str

    def to_json(self) -> str:
        """One line of JSON (no newline inside, whatever the names hold)."""
        return json.dumps(asdict(self), ensure_ascii=False, allow_nan=False, separators=(", ", ": "))

    @classmethod
    def from_json(cls, line: str) -> Figure:
        data = json.loads(line)
        return cls(**{**data, "command": tuple(data["command"]), "machine": Machine(**data["machine"])})


def current_commit(repo: Path = REPO) -> str:
    """`git rev-parse HEAD` of `repo`, "+dirty" when a tracked file (outside bench/results/) differs from it;
    "unknown" when `repo` is not a git checkout or git is missing."""
    if not (repo / ".git").exists():
        return "unknown"
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}+dirty" if changes else head


def this_command(argv: Sequence[str] | None = None) -> list[str]:
    """`sys.argv` as a command to retype: a script in the checkout by its path relative to the checkout
    (`python bench/bench_store.py --smoke`), a package's `__main__.py` as `python -m package`."""
    argv = list(sys.argv if argv is None else argv)
    if not argv or not argv[0]:
        return argv
    script = Path(argv[0]).resolve()
    if not script.is_relative_to(REPO):
        return argv
    relative = script.relative_to(REPO)
    if relative.name == "__main__.py":
        return ["python", "-m", ".".join(relative.parent.parts), *argv[1:]]
    return ["python", str(relative), *argv[1:]]


def results_dir() -> Path | None:
    """Where records go now: `$WORKBENCH_RESULTS_DIR`, else the checkout's `bench/results/` (None under pytest
    or outside a checkout: nothing is recorded)."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    if "PYTEST_CURRENT_TEST" in os.environ or not (REPO / "bench").is_dir():
        return None
    return REPO / "bench" / "results"


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class FigureLog:
    """The figures of one run of one bench (or demo), appended as they come to `<directory>/<bench>.jsonl`.

        log = FigureLog("bench_kernel", mode="quick")   # machine and load are read now, the commit at first use
        log.record("kernel start p50", 212.0, "ms", target="<= 300 ms", ok=True)

    Each record is one `write` of one line to a file opened with O_APPEND, so concurrent runs never
    interleave within a line. `directory` defaults to `results_dir()`; when that is None, `record` only
    returns the figure.
    """

    bench: str
    mode: Mode = "full"
    command: Sequence[str] = field(default_factory=this_command)
    directory: Path | None = field(default_factory=results_dir)
    machine: Machine = field(default_factory=Machine.here)
    commit: str = ""  # read at the first record: `current_commit()`

    def __post_init__(self) -> None:
        if not _BENCH_NAME.fullmatch(self.bench):
            raise ValueError(
                f"bench name {self.bench!r} makes a bad file name: use letters, digits, '_', '.' or '-' "
                "(e.g. the script's stem, 'bench_store')"
            )
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: use one of {', '.join(MODES)}")

    @property
    def path(self) -> Path | None:
        return None if self.directory is None else Path(self.directory) / f"{self.bench}.jsonl"

    def record(
        self,
        name: str,
        value: float | None,
        unit: str,
        *,
        target: str = "",
        baseline: float | None = None,
        ok: bool | None = None,
    ) -> Figure:
        """Append one figure (its `name` stripped of surrounding spaces) and return it."""
        if not name.strip():
            raise ValueError("a figure needs a name: what was measured, e.g. 'kernel start p50'")
        self.commit = self.commit or current_commit()
        figure = Figure(
            bench=self.bench,
            name=name.strip(),
            value=_finite(value),
            unit=unit.strip(),
            command=tuple(self.command),
            commit=self.commit,
            machine=self.machine,
            date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            mode=self.mode,
            target=target,
            baseline=_finite(baseline),
            ok=None if ok is None else bool(ok),
        )
        if self.path is not None:
            append_line(self.path, figure.to_json())
        return figure


def append_line(path: Path, line: str) -> None:
    """Append `line` and a newline to `path` in one `write` (O_APPEND: atomic against other appenders)."""
    if "\n" in line:
        raise ValueError("a record is one line: serialise it with Figure.to_json")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (line + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.write(fd, data) != len(data):
            raise OSError(f"short write appending a record to {path}; the disk may be full")
    finally:
        os.close(fd)


def read_figures(directory: Path) -> list[Figure]:
    """Every record in `directory/*.jsonl`, file by file (sorted) in written order. A malformed line fails
    with its file and line number."""
    figures = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                figures.append(Figure.from_json(line))
            except (ValueError, TypeError, KeyError) as e:
                raise ValueError(f"{path}:{number}: not a figure record ({e}); fix or delete the line") from e
    return figures


def record_demo_summary(summary: Path, *, smoke: bool = False, bench: str = "demo") -> list[Figure]:
    """Record the figures of a demo's `summary.json`: held-out accuracy per hop count before and after RL
    (or per stage, for the SmolLM2 demo), the gain and the wall time.

        record_demo_summary(run_dir / "summary.json", smoke=cfg.eval_tasks < DemoConfig().eval_tasks)
    """
    data: dict[str, Any] = json.loads(Path(summary).read_text())
    log = FigureLog(bench, mode="smoke" if smoke else "full")
    out: list[Figure] = []
    stages: dict[str, list[dict[str, Any]]] = data.get("stages") or {
        key: data[key] for key in ("before", "after") if key in data
    }
    for stage, rows in stages.items():
        label = {"before": "before RL", "after": "after RL"}.get(stage, f"after {stage}")
        for row in rows:
            accuracy = float(row["em"] if "em" in row else row["accuracy"])
            out.append(log.record(f"held-out accuracy {label}, hops {row['hops']}", 100 * accuracy, "%"))
    if "before" in stages and "after" in stages:
        em = {key: next(float(r["em"]) for r in stages[key] if r["hops"] == "all") for key in ("before", "after")}
        out.append(log.record("held-out accuracy gain, all hops", 100 * (em["after"] - em["before"]), "points"))
    if data.get("seconds"):
        out.append(log.record("wall time, all stages", sum(data["seconds"].values()) / 60, "min"))
    return out


__all__ = [
    "MODES",
    "RESULTS_ENV",
    "Figure",
    "FigureLog",
    "Machine",
    "Mode",
    "append_line",
    "current_commit",
    "read_figures",
    "record_demo_summary",
    "results_dir",
    "this_command",
]
