"""End to end in a real browser: Playwright drives Debian's Chromium against
``streamlit run app.py``.

Upload a ground truth and two prediction files on the main page, read KIEval_Aligned,
open the Automation page and move the threshold (keyboard on the slider, then a click on
the trade-off curve), and download the error CSV from the Errors page.

Skipped only when ``/usr/bin/chromium`` is absent outside CI (``.ci/run`` installs it).
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from kieval_app import automation
from kieval_app.headless import CHROMIUM_ARGS, streamlit_server
from kieval_app.text import pct
from kieval_core import evaluate, load

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def app_url():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):  # .ci/run installs it: a missing browser is a CI failure
            pytest.fail("Debian chromium is not installed at /usr/bin/chromium")
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium")
    with streamlit_server(ROOT) as url:
        yield url


def _idle(page) -> None:
    """Wait until the script run has finished and the page has drawn."""
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning';
        }""",
        timeout=TIMEOUT_MS,
    )
    page.wait_for_timeout(500)


def _metric(page, label: str) -> str:
    card = (
        page.get_by_test_id("stMetric")
        .filter(has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True))
        .first
    )
    return card.get_by_test_id("stMetricValue").inner_text().strip()


def _open(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    page.get_by_role("heading", level=1).filter(has_text=title.split()[0]).first.wait_for(
        timeout=TIMEOUT_MS
    )
    _idle(page)


def test_upload_automation_threshold_and_error_download(app_url, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    gt_path = SAMPLE / "cord_v2_gt.jsonl"
    weak_path, llm_path = SAMPLE / "sim_weak.jsonl", SAMPLE / "sim_llm.jsonl"
    expected = evaluate(load(gt_path), {"sim_weak": load(weak_path)}).models["sim_weak"]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app_url)
        page.get_by_role("heading", name="KIEval Workbench").wait_for()
        _idle(page)

        # --- upload on the main page -------------------------------------------------------
        uploaders = page.get_by_test_id("stFileUploader")
        uploaders.nth(0).locator("input[type=file]").set_input_files(str(gt_path))
        expect(page.get_by_text("Ground truth loaded.")).to_be_visible()
        uploaders.nth(1).locator("input[type=file]").set_input_files(
            [str(weak_path), str(llm_path)]
        )
        expect(
            page.get_by_test_id("stMetricLabel").get_by_text("KIEval_Aligned", exact=True)
        ).to_be_visible()
        _idle(page)
        assert _metric(page, "KIEval_Aligned") == pct(expected.aligned)
        expect(
            page.get_by_test_id("stSidebar").get_by_role("combobox", name="Model")
        ).to_have_value("sim_weak")
        assert not page.get_by_test_id("stException").count()

        # --- automation: move the threshold --------------------------------------------------
        _open(page, "Automation")
        slider = page.get_by_test_id("stSlider").get_by_role("slider")
        slider.focus()
        slider.press("Home")
        expect(page.get_by_text("At τ = 0.0000")).to_be_visible()
        _idle(page)
        assert _metric(page, "Automation rate") == "100.0%"
        assert _metric(page, "Accuracy after review") == pct(expected.aligned, 2)

        # a click on a point of the trade-off curve sets τ to that point's threshold
        chart = page.get_by_test_id("stPlotlyChart").nth(1).locator(".js-plotly-plot")
        chart.scroll_into_view_if_needed()
        point = chart.evaluate(
            """(gd) => {
                const trace = gd._fullData[0], size = gd._fullLayout._size;
                const i = Math.floor(trace.x.length / 2);
                const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                return {x: size.l + xa.l2p(trace.x[i]), y: size.t + ya.l2p(trace.y[i])};
            }"""
        )
        box = chart.bounding_box()
        page.mouse.click(box["x"] + point["x"], box["y"] + point["y"])
        expect(page.get_by_text("At τ = 0.0000")).to_have_count(0)
        _idle(page)
        shown = page.get_by_text(re.compile(r"^At τ = \d\.\d{4}$")).inner_text()
        tau = float(shown.rsplit("=", 1)[1])
        assert tau > 0 and tau in set(expected.curve["threshold"].round(4))
        now = automation.review_summary(expected, tau)
        assert _metric(page, "Automation rate") == pct(now["auto_rate"], 1)

        # --- errors: download the CSV --------------------------------------------------------
        _open(page, "Errors")
        with page.expect_download() as download:
            page.get_by_role("button", name="Download errors CSV").click()
        target = tmp_path / download.value.suggested_filename
        download.value.save_as(target)
        assert target.name == "errors_sim_weak.csv"
        errors = pd.read_csv(io.BytesIO(target.read_bytes()), keep_default_na=False)
        assert list(errors.columns) == list(expected.errors.columns)
        assert len(errors) == expected.corrections.total
        assert errors["kind"].value_counts().to_dict() == {
            k: v for k, v in expected.errors["kind"].value_counts().items() if v
        }
        browser.close()


HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '<img src="x" onerror="window.__pwned = 2">',
    "[click me](http://evil.example/)",
    "**bold** <b>tag</b> &amp; $x$",
]


def _browser(p):
    return p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def _upload(page, app_url, gt, preds) -> None:
    """Open the app; upload a ground truth (None keeps the sample's) and predictions."""
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app_url)
    page.get_by_role("heading", name="KIEval Workbench").wait_for()
    _idle(page)
    uploaders = page.get_by_test_id("stFileUploader")
    if gt is not None:
        uploaders.nth(0).locator("input[type=file]").set_input_files(str(gt))
        page.get_by_text("Ground truth loaded.").wait_for()
        _idle(page)
    uploaders.nth(1).locator("input[type=file]").set_input_files([str(p) for p in preds])
    page.get_by_test_id("stMetricLabel").get_by_text("KIEval_Aligned", exact=True).wait_for()
    _idle(page)


def _overview(page) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Overview").click()
    page.get_by_role("heading", name="KIEval Workbench").wait_for(timeout=TIMEOUT_MS)
    _idle(page)


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_hostile_values_stay_text(app_url, tmp_path):
    """HTML, scripts and markdown inside uploaded values and ids stay literal text."""
    from playwright.sync_api import sync_playwright

    gt = _jsonl(tmp_path / "gt.jsonl", [
        {"doc_id": f"d{i}{v}", "gt_parse": {"store": v, "menu": [{"nm": v, "price": "1"}]}}
        for i, v in enumerate(HOSTILE)])
    pred = _jsonl(tmp_path / "pred.jsonl", [
        {"doc_id": f"d{i}{v}", "prediction": {"store": v + "!", "menu": [{"nm": "x" + v}]}}
        for i, v in enumerate(HOSTILE)])
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        _upload(page, app_url, gt, [pred])
        for title in ("Documents", "Errors", "Automation", "Overview"):
            if title == "Overview":
                _overview(page)
            else:
                _open(page, title)
            if title == "Documents":  # the values are on the page, as text
                shown = page.locator("main").inner_text()
                assert any(v in shown for v in HOSTILE), shown[:500]
            assert page.evaluate("() => window.__pwned") is None, title
            assert page.locator('img[src="x"]').count() == 0, title
            assert page.locator('a[href="http://evil.example/"]').count() == 0, title
            assert page.locator("main b").filter(has_text="tag").count() == 0, title
            assert not page.get_by_test_id("stException").count(), title
        browser.close()


def test_two_sessions_never_see_each_other(app_url):
    """Two browser contexts at once, each with its own predictions."""
    from playwright.sync_api import sync_playwright

    gt = SAMPLE / "cord_v2_gt.jsonl"
    strong, weak = SAMPLE / "sim_strong.jsonl", SAMPLE / "sim_weak.jsonl"
    expected = evaluate(load(gt), {"s": load(strong), "w": load(weak)}).models
    with sync_playwright() as p:
        browser = _browser(p)
        first = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        second = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        # the sample ground truth stays; each session replaces the sample's predictions
        _upload(first, app_url, None, [strong])
        _upload(second, app_url, None, [weak])
        for page in (first, second):  # each works on, after the other uploaded
            _open(page, "Automation")
            _overview(page)
        checks = ((first, "sim_strong", "sim_weak", expected["s"]),
                  (second, "sim_weak", "sim_strong", expected["w"]))
        for page, own, other, model in checks:
            assert _metric(page, "KIEval_Aligned") == pct(model.aligned)
            sidebar = page.get_by_test_id("stSidebar")
            assert sidebar.get_by_role("combobox", name="Model").input_value() == own
            assert other not in page.locator("main").inner_text()
        browser.close()
