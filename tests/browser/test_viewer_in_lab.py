"""The widgets in a real JupyterLab, driven through Debian's Chromium by Playwright, on a
demo-sized run (scripted Dr. Zero iterations in real sandboxed kernels, a real store).

Checks: the list renders with the first trajectory shown, search (on Enter) filters it, j/k and h/l move,
the token view shows both env-mask colours, compare marks the divergent turn, a dashboard click
filters a viewer, no output area shows warning text, and no figure or viewer is wider than its
cell. Screenshots land in `test-artifacts/`. The offline report is opened in Chromium too.
Set WORKBENCH_SKIP_BROWSER=1 to skip; otherwise a missing Chromium fails with the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_demo import build_demo_run
from browser_lab import REPO, lab_server, open_and_run_all, require_chromium
from browser_lab import shot as _shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    require_chromium()
    run_dir = tmp_path_factory.mktemp("demo") / "run"
    return run_dir, build_demo_run(run_dir)


def _selected(viewer) -> str:
    return viewer.locator(".wb-row.wb-selected").get_attribute("data-id")


def _search(box, text: str) -> None:
    """Type `text` in a viewer's search box and apply it (Enter)."""
    box.fill(text)
    box.press("Enter")


def _wait_rendered(page, viewer_index: int, traj_id: str) -> None:
    page.wait_for_function(
        "([i, id]) => document.querySelectorAll('.wb-viewer')[i]?.dataset.renderedId === id",
        arg=[viewer_index, traj_id],
        timeout=30_000,
    )


def test_widgets_in_jupyterlab(demo, browser, tmp_path) -> None:
    run_dir, info = demo
    with lab_server(
        tmp_path, REPO / "notebooks" / "_browser_viewer.ipynb", env={"WB_BROWSER_RUN": str(run_dir)}
    ) as url:
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            open_and_run_all(page, url)
            viewer = page.locator(".wb-viewer").first
            viewer.locator(".wb-row").first.wait_for(timeout=120_000)
            page.wait_for_selector(".wb-figures .main-svg", timeout=120_000)
            page.wait_for_function("document.querySelectorAll('.wb-figures').length >= 2", timeout=60_000)
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000, state="attached"
            )

            # the list renders, the first trajectory is shown without a click
            first = viewer.locator(".wb-row").first.get_attribute("data-id")
            _wait_rendered(page, 0, first)
            total = int(viewer.get_attribute("data-rows"))
            assert total == info["total"] and _selected(viewer) == first
            assert viewer.locator(".wb-turn.wb-current").count() == 1
            _shot(page, "viewer_first", viewer)

            # search filters the list (and the selection follows it)
            search = viewer.locator(".wb-search")
            _search(search, "token demo")  # only the two token trajectories' metadata says it: not searched
            page.wait_for_function("document.querySelector('.wb-viewer').dataset.rows === '0'")
            _search(search, "tiny")  # their policy, tiny@step-0 and tiny@step-40
            page.wait_for_function("document.querySelector('.wb-viewer').dataset.rows === '2'")
            a, b = info["token_ids"]
            _wait_rendered(page, 0, a)
            _search(search, "")
            page.wait_for_function(f"document.querySelector('.wb-viewer').dataset.rows === '{total}'")

            # keys: j/k through trajectories, h/l through turns
            viewer.locator(".wb-row").first.click()
            _wait_rendered(page, 0, first)
            page.keyboard.press("j")
            second = viewer.locator(".wb-row").nth(1).get_attribute("data-id")
            _wait_rendered(page, 0, second)
            page.keyboard.press("k")
            _wait_rendered(page, 0, first)
            # token view: both env-mask colours
            _search(search, "tiny")
            _wait_rendered(page, 0, a)
            viewer.locator(".wb-row").first.click()
            page.keyboard.press("l")
            page.wait_for_function("document.querySelector('.wb-viewer').dataset.step === '1'")
            assert viewer.locator(".wb-turn.wb-current").get_attribute("data-index") == "1"
            page.keyboard.press("h")
            page.wait_for_function("document.querySelector('.wb-viewer').dataset.step === '0'")
            page.keyboard.press("t")
            viewer.locator(".wb-token-ids").wait_for()
            trained = viewer.locator(".wb-token-ids .wb-tok-trained")
            observed = viewer.locator(".wb-token-ids .wb-tok-obs")
            assert trained.count() == 24 and observed.count() == 12
            colours = page.evaluate("""() => {
                const bg = (sel) => [...document.querySelectorAll(sel)].map(e => getComputedStyle(e).backgroundColor);
                return {trained: bg('.wb-token-ids .wb-tok-trained'), obs: bg('.wb-token-ids .wb-tok-obs')}; }""")
            assert set(colours["obs"]).isdisjoint(colours["trained"]) and len(set(colours["trained"])) > 3
            _shot(page, "viewer_tokens", viewer.locator(".wb-detail"))
            viewer.locator(".wb-tab[data-tab='turns']").click()

            # compare: pin a, select b, compare: the divergent turn is marked
            viewer.locator(".wb-pin").click()
            page.wait_for_selector(f".wb-viewer .wb-row.wb-pinned[data-id='{a}']")
            viewer.locator(f".wb-row[data-id='{b}']").click()
            _wait_rendered(page, 0, b)
            viewer.locator(".wb-compare-btn").click()
            diverge = viewer.locator(".wb-cmp-row.wb-diverge")
            diverge.wait_for(timeout=30_000)
            assert diverge.get_attribute("data-index") == str(info["diverge_at"])
            assert viewer.locator(".wb-cmp-row.wb-same").count() == info["diverge_at"]
            _shot(page, "viewer_compare", viewer.locator(".wb-compare"))
            viewer.locator(".wb-close-compare").click()
            _search(search, "")

            # a click on a dashboard point opens a viewer filtered to the trajectories behind it
            dash_fig = page.locator(".wb-figure[data-name='solver_pass_rate']")
            dash_fig.scroll_into_view_if_needed()
            point = dash_fig.locator(".scatterlayer .point").first
            point.wait_for()
            box = point.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_function("document.querySelectorAll('.wb-viewer').length === 2", timeout=30_000)
            linked = page.locator(".wb-viewer").nth(1)
            linked.locator(".wb-link-label").wait_for()
            n_linked = int(linked.get_attribute("data-rows"))
            assert 0 < n_linked < total and "solver pass rate" in linked.locator(".wb-link-label").inner_text()
            roles = {r.inner_text() for r in linked.locator(".wb-row .wb-c-role").all()}
            assert roles == {"solver"}
            _shot(
                page,
                "dashboard_click",
                page.locator(".jp-OutputArea-output").filter(has=page.locator(".wb-figures")).first,
            )
            _shot(page, "dashboard_plots", page.locator(".wb-figures").first)
            _shot(page, "tuner_plots", page.locator(".wb-figures").nth(1))

            # nothing red in any output area; nothing wider than its cell
            assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
            texts = " ".join(page.locator(".jp-OutputArea-output").all_inner_texts())
            assert "Warning" not in texts and "Traceback" not in texts and "not JSON compliant" not in texts
            overflow = page.evaluate("""() => {
                const bad = [];
                for (const el of document.querySelectorAll('.wb-figure .main-svg, .wb-viewer, .wb-figures')) {
                    const area = el.closest('.jp-OutputArea-output');
                    if (!area) continue;
                    const r = el.getBoundingClientRect(), a = area.getBoundingClientRect();
                    if (r.width > 0 && r.right > a.right + 1)
                        bad.push([el.className.baseVal ?? el.className, r.right, a.right]);
                }
                return bad; }""")
            assert overflow == []
            _shot(page, "lab_full")
        except Exception:
            _shot(page, "browser_failure")
            raise


def test_offline_report_in_chromium(demo, browser, tmp_path) -> None:
    from workbench.widgets import write_report

    run_dir, info = demo
    path = write_report(run_dir, tmp_path / "report.html")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(path.as_uri())
        page.wait_for_selector(".wb-viewer .wb-row")
        page.wait_for_selector(".wb-figures .main-svg")
        assert page.locator(".wb-viewer").get_attribute("data-rows") == str(info["total"])
        _search(page.locator(".wb-viewer .wb-search"), "tiny")  # the report: a substring of the policy
        page.wait_for_function("document.querySelector('.wb-viewer').dataset.rows === '2'")
        page.locator(".wb-viewer .wb-row").first.click()
        page.keyboard.press("t")
        assert page.locator(".wb-token-ids .wb-tok-obs").count() == 12
        assert [u for u in requests if not u.startswith("file:") and not u.startswith("data:")] == []
        _shot(page, "report")
    except Exception:
        _shot(page, "report_failure")
        raise
