"""Figure records (`workbench/figures.py`), the pages rendered from them (`scripts/render_figures.py`) and the
prose check: measured figures live in records, never typed into tutorials and guides."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from workbench.figures import (
    RESULTS_ENV,
    Figure,
    FigureLog,
    Machine,
    current_commit,
    read_figures,
    record_demo_summary,
    results_dir,
    this_command,
)

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {f.name for f in fields(Figure)}


def _load_renderer():
    spec = importlib.util.spec_from_file_location("render_figures", ROOT / "scripts" / "render_figures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = _load_renderer()


def test_a_record_is_one_json_line_with_every_field(tmp_path):
    log = FigureLog("bench_x", mode="smoke", command=["python", "bench/bench_x.py", "--smoke"], directory=tmp_path)
    log.record("kernel start p50", 212.5, "ms", target="<= 300 ms", baseline=100.0, ok=True)
    log.record('  padded | odd\nname ☃ "quoted"  ', float("nan"), "x")
    lines = (tmp_path / "bench_x.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert set(first) == FIELDS
    assert first["value"] == 212.5 and first["unit"] == "ms" and first["target"] == "<= 300 ms"
    assert first["ok"] is True and first["baseline"] == 100.0 and first["mode"] == "smoke"
    assert first["command"] == ["python", "bench/bench_x.py", "--smoke"]
    assert set(first["machine"]) == {"cpu", "cores", "load"} and first["machine"]["cores"] >= 1
    assert first["date"].endswith("Z") and first["date"][:2] == "20"
    assert second["name"] == 'padded | odd\nname ☃ "quoted"' and second["value"] is None  # NaN is not JSON
    assert [f.name for f in read_figures(tmp_path)] == ["kernel start p50", second["name"]]


def test_machine_and_commit_describe_this_checkout():
    machine = Machine.here()
    if "model name" in Path("/proc/cpuinfo").read_text():  # x86 Linux names the model there
        assert machine.cpu != "unknown" and machine.cpu in Path("/proc/cpuinfo").read_text()
    assert machine.cores >= 1 and machine.load >= 0
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert current_commit(ROOT).removesuffix("+dirty") == head
    assert current_commit(ROOT.parent / "not-a-checkout") == "unknown"


def test_command_names_the_script_as_it_would_be_retyped():
    assert this_command([str(ROOT / "bench" / "bench_store.py"), "--smoke"]) == [
        "python",
        "bench/bench_store.py",
        "--smoke",
    ]
    assert this_command([str(ROOT / "workbench" / "demo" / "__main__.py"), "--fast"]) == [
        "python",
        "-m",
        "workbench.demo",
        "--fast",
    ]
    assert this_command(["/elsewhere/x.py"]) == ["/elsewhere/x.py"]


def test_bad_names_and_modes_are_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match="bad file name"):
        FigureLog("../escape", directory=tmp_path)
    with pytest.raises(ValueError, match="one of full, quick, smoke"):
        FigureLog("bench_x", mode="huge", directory=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a name"):
        FigureLog("bench_x", directory=tmp_path).record("  ", 1.0, "s")
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match=r"broken.jsonl:1: not a figure record"):
        read_figures(tmp_path)


def test_results_go_to_the_env_folder_and_nowhere_under_pytest_without_it(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    assert results_dir() == tmp_path
    monkeypatch.delenv(RESULTS_ENV)
    assert "PYTEST_CURRENT_TEST" in os.environ
    assert results_dir() is None  # a test that forgot the variable never writes into bench/results/
    assert FigureLog("bench_x").record("n", 1.0, "s").value == 1.0


def _append_many(directory: str, worker: int) -> None:
    log = FigureLog("shared", directory=Path(directory), command=["w"], machine=Machine("cpu", 1, 0.0), commit="c")
    for i in range(200):
        log.record(f"worker {worker} figure {i} " + "y" * 300, float(i), "s")


def test_concurrent_writers_never_interleave_a_line(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_many, args=(str(tmp_path), w)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    figures = read_figures(tmp_path)  # every line parses
    assert len(figures) == 600 and len({f.name for f in figures}) == 600


def test_demo_summary_records_accuracy_gain_and_time(tmp_path, monkeypatch):
    summary = tmp_path / "summary.json"
    rows = [{"hops": "1", "em": 0.5, "n": 4}, {"hops": "all", "em": 0.25, "n": 8}]
    after = [{"hops": "1", "em": 0.75, "n": 4}, {"hops": "all", "em": 0.5, "n": 8}]
    summary.write_text(json.dumps({"before": rows, "after": after, "seconds": {"a": 60.0, "b": 120.0}}))
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))
    figures = record_demo_summary(summary, smoke=True)
    by_name = {f.name: f for f in figures}
    assert by_name["held-out accuracy before RL, hops all"].value == 25.0
    assert by_name["held-out accuracy after RL, hops 1"].value == 75.0
    assert by_name["held-out accuracy gain, all hops"].value == 25.0
    assert by_name["wall time, all stages"].value == 3.0
    assert {f.mode for f in figures} == {"smoke"}
    assert read_figures(tmp_path / "results") == figures
    real = tmp_path / "real.json"
    real.write_text(json.dumps({"stages": {"sft": [{"hops": "all", "accuracy": 0.1}]}}))
    assert [f.name for f in record_demo_summary(real)] == ["held-out accuracy after sft, hops all"]


def test_renderer_writes_both_pages_from_records_in_a_tmp_dir(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    machine = Machine("Test CPU", 2, 1.5)
    old = FigureLog("bench_a", command=["python", "bench/bench_a.py"], directory=results, machine=machine, commit="c0")
    old.record("latency p50", 10.0, "ms", target="<= 5 ms", ok=False)
    smoke = ["python", "bench/bench_a.py", "--smoke"]
    new = FigureLog("bench_a", mode="smoke", command=smoke, directory=results, machine=machine, commit="c1+dirty")
    new.record("latency p50", 4.0, "ms", target="<= 5 ms", ok=True, baseline=8.0)
    FigureLog("demo", command=["python", "-m", "workbench.demo"], directory=results).record("gain", 21.5, "points")
    new.record("parse <think> | *fast* `x` a_b", 1.0, "ms")
    assert render.main(["--results", str(results), "--docs", str(docs), "--check"]) == 1
    assert render.main(["--results", str(results), "--docs", str(docs)]) == 0
    assert render.main(["--results", str(results), "--docs", str(docs), "--check"]) == 0
    bench_page, results_page = (docs / "benchmarks.md").read_text(), (docs / "results.md").read_text()
    assert "## bench_a" in bench_page and "demo" not in bench_page.split("## bench_a")[1]
    assert "| latency p50 | 4 | ms | 8 | &lt;= 5 ms | ok |" in bench_page  # the latest record per machine
    assert "| 10 |" not in bench_page
    assert "`python bench/bench_a.py --smoke`" in bench_page and "commit `c1+dirty`" in bench_page
    assert "Test CPU, 2 cores, load 1.5 at start" in bench_page and "**smoke**" in bench_page
    assert "| parse &lt;think&gt; \\| \\*fast\\* \\`x\\` a\\_b | 1 | ms |" in bench_page  # shown as written
    assert "## demo" in results_page and "| gain | 21.5 | points |" in results_page


def test_committed_pages_equal_what_the_committed_records_render():
    pages = render.render_pages(read_figures(ROOT / "bench" / "results"))
    for name, text in pages.items():
        path = ROOT / "docs" / name
        assert path.exists() and path.read_text() == text, f"{path} is stale: run `python scripts/render_figures.py`"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("A start takes 12.3 ms on a quiet machine.", ["12.3 ms"]),
        ("It needs 4.5 GB and 89.1 min; served is 0.83x direct, 1.3× slower, 95% right.", None),
        ("Throughput: 112 tok/s and 2,048 passages/s; 10ms cold.", ["112 tok/s", "2,048 passages/s", "10ms"]),
        ("Python 3.11, 2 GPUs, 3 hops, a 1-min load, 4 x 256 tokens, step 5, 0x1F.", []),
        ("```\nprint('12 ms')\n```\nInline `took 3 s` too.", []),
        ("> smoke size, 6f246da: 12 s here means nothing", []),
        ("~~~python\n5 s\n~~~\nafter the fence 7 s", ["7 s"]),
    ],
)
def test_measured_figures_are_flagged_in_prose_only(text, found):
    hits = [match for _, match in render.measured_figures(text)]
    if found is None:
        assert hits == ["4.5 GB", "89.1 min", "0.83x", "1.3×", "95%"]
    else:
        assert hits == found


def _prose_pages() -> list[Path]:
    return sorted(p for folder in ("tutorials", "guides") for p in (ROOT / "docs" / folder).rglob("*.md"))


@pytest.mark.parametrize("page", _prose_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_tutorials_and_guides_carry_no_measured_figures(page):
    hits = render.measured_figures(page.read_text())
    assert hits == [], f"{page}: measured figures in prose {hits}; put them in a bench record and link the results"
