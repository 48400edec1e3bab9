"""The viewer's research views in a real JupyterLab in Chromium: full-text search (words in any
order, applied on Enter), tokens decoded with the run's own tokenizer (with a degenerate logprob
drawn as such), and the group tab of a training step. Screenshots land in `test-artifacts/`.
Set WORKBENCH_SKIP_BROWSER=1 to skip."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_lab import ARTIFACTS, REPO, lab_server, open_and_run_all

from workbench.models.tiny import build_tokenizer
from workbench.store import Store
from workbench.train.estimators import Batch, make_estimator
from workbench.train.step_records import advantages_payload
from workbench.trajectory import Step, Task, Trajectory

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CODE = "hits = search('capital of Teivrei')\nprint(hits[0])"
TEXT = f"<think>Find the capital first.</think><code>{CODE}</code>"


def build_run(root: Path) -> Path:
    """A training step's two groups of two rollouts, token ids from a tokenizer saved beside the run."""
    tok = build_tokenizer([TEXT, "Doc 3: Molvad is the capital of Teivrei."] * 20, vocab_size=320)
    tok.save_pretrained(root / "final_model")
    policy = {"backend": "transformers", "name": "transformers:tiny", "logprobs": "processed (after temperature)"}
    trajs = []
    for k, (question, rewards) in enumerate(
        [("What is the capital of Teivrei?", (1.0, 0.0)), ("Who founded Kasland?", (0.5, 0.5))]
    ):
        for j, reward in enumerate(rewards):
            ids = tok.encode(TEXT)
            step = Step(0, TEXT, think="Find the capital first.", code=CODE, observation_text="Doc 3: Molvad",
                        completion_ids=ids, logprobs=[0.0] + [-0.2 * (i % 7) - 0.05 for i in range(len(ids) - 1)],
                        observation_ids=tok.encode("Doc 3: Molvad"))  # fmt: skip
            t = Trajectory(task=Task(f"task-{k}", question), id=f"g{k}r{j}".ljust(32, "0"), steps=[step],
                           final_answer="Molvad" if reward else "Kasland", termination="submitted",
                           rewards={"total": reward}, lineage={"policy": policy, "train_step": 0})  # fmt: skip
            trajs.append(t)
    with Store(root / "run") as store:
        store.write_many(trajs)
        estimator = make_estimator("grpo")
        batch = Batch(trajs, 2)
        store.log_event("train", "advantages", advantages_payload(0, "grpo", batch, estimator.advantages(batch)))
    return root / "run"


def test_search_decoded_tokens_and_group_view(browser, tmp_path) -> None:
    run_dir = build_run(tmp_path)
    rows = "document.querySelector('.wb-viewer').dataset.rows === '{}'"
    notebook = REPO / "notebooks" / "_browser_viewer.ipynb"
    with lab_server(tmp_path / "lab", notebook, env={"WB_BROWSER_RUN": str(run_dir)}) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            open_and_run_all(page, url)
            viewer = page.locator(".wb-viewer").first
            viewer.locator(".wb-row").first.wait_for(timeout=120_000)
            page.wait_for_function(rows.format(4), timeout=60_000)

            search = viewer.locator(".wb-search")
            search.fill("kasl founded")  # typed: nothing happens until Enter
            assert viewer.get_attribute("data-rows") == "4"
            search.press("Enter")  # both words, in any order, as word prefixes: group 1's question
            page.wait_for_function(rows.format(2), timeout=30_000)
            first = viewer.locator(".wb-row").first
            first.click()

            viewer.locator(".wb-tab[data-tab='tokens']").click()
            decoded = viewer.locator(".wb-token-ids.wb-decoded")
            decoded.wait_for(timeout=30_000)
            text = "".join(s.inner_text() for s in decoded.locator(".wb-tok-trained").all())
            assert text.replace("⏎", "\n") == TEXT
            assert decoded.locator(".wb-tok-zero").count() == 1  # the 0.0 logprob, drawn as ambiguous
            assert "processed (after temperature) logprobs" in viewer.locator(".wb-lp-note").inner_text()
            title = decoded.locator(".wb-tok-trained").nth(1).get_attribute("title")
            assert title.startswith("id ") and "position 1" in title and "mask 1" in title and "logprob" in title
            viewer.locator(".wb-detail").screenshot(path=str(ARTIFACTS / "viewer_decoded_tokens.png"))

            viewer.locator(".wb-tab[data-tab='group']").click()
            table = viewer.locator(".wb-group-table")
            table.wait_for(timeout=30_000)
            assert table.locator("tr[data-id]").count() == 2
            assert [a.inner_text() for a in table.locator(".wb-group-adv").all()] == ["0", "0"]  # a flat group
            viewer.locator(".wb-detail").screenshot(path=str(ARTIFACTS / "viewer_group.png"))
            page.screenshot(path=str(ARTIFACTS / "viewer_search.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "research_views_failure.png"))
            raise
