"""`workbench eval` end to end: a saved world, the scripted solver, real sandboxed kernels."""

import json

from workbench.cli import main
from workbench.worlds import make_world


def test_eval_cli_reports_per_hop_and_stores(tmp_path, capsys):
    world = make_world(seed=0, size="small")
    data = world.save(tmp_path / "world")
    out = tmp_path / "eval"
    rc = main(
        [
            "eval",
            "--dataset",
            str(data / "qa_test.jsonl"),
            "--policy",
            "scripted",
            "--limit",
            "6",
            "--concurrency",
            "3",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "pass@1" in printed and "cover_em" in printed
    report = json.loads((out / "eval.json").read_text())
    overall = next(r for r in report["rows"] if r["hops"] == "all")
    assert overall["questions"] == 6 and overall["em"] == 1.0  # the scripted solver is exact
    assert {r["hops"] for r in report["rows"]} >= {"1", "all"}
    from workbench.store import Store

    with Store.open_readonly(out) as store:
        assert len(store) == 6
