"""Issue 29's first screen in a real browser at 1,440 px: SROIE with Textract, GPT-4o and
Claude Haiku uploaded, the Overview shows both rankings (strict and under the suggested
rules) and the sentence that GPT-4o is first under the suggested rules, with no click and no
horizontal scroll. The screenshot is kept in the test's folder (``docs/make_screenshots.py
--pages overview`` makes the README's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_setup import CHROMIUM, need_chromium, wait_idle

from kieval_app.serving.headless import CHROMIUM_ARGS, streamlit_server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 180_000
MODELS = ["aws_textract_analyzeexpense", "gpt4o_vision_themurtez", "claude_haiku_4.5"]


def test_sroie_first_screen_ranks_both_ways_at_1440(shared_data, tmp_path):
    from playwright.sync_api import sync_playwright

    need_chromium()
    sroie = shared_data / "sroie"
    with streamlit_server(ROOT) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url)
        page.get_by_role("heading", name="KIEval Workbench").wait_for()
        wait_idle(page, TIMEOUT_MS)
        page.locator('[class*="st-key-upload_gt_"]').locator("input[type=file]").set_input_files(
            str(sroie / "sroie_test_gt.jsonl"))
        page.get_by_text("sroie_test_gt.jsonl: loaded as the ground truth").wait_for()
        wait_idle(page, TIMEOUT_MS)
        page.locator('[class*="st-key-upload_pred_"]').locator("input[type=file]").set_input_files(
            [str(sroie / "predictions" / f"{m}.jsonl") for m in MODELS])
        sentence = page.get_by_text("gpt4o_vision_themurtez ranks first; strictly it ranks last.")
        sentence.wait_for()
        wait_idle(page, TIMEOUT_MS, settle_ms=1500)
        assert sentence.inner_text().startswith("Under the suggested rules (")
        table = page.get_by_test_id("stTable").filter(has_text="under the suggested rules").first
        headers = [h.inner_text().strip() for h in table.locator("thead th").all()]
        assert headers[-2:] == ["strict (every field exact)", "under the suggested rules"]
        rows = {}
        for row in table.locator("tbody tr").all():
            cells = [c.inner_text().strip() for c in row.locator("th, td").all()][-len(headers):]
            rows[cells[0]] = cells[1:]
        assert set(rows) == set(MODELS)
        assert rows["gpt4o_vision_themurtez"][-2].endswith("(#3)")  # strictly last
        assert rows["gpt4o_vision_themurtez"][-1].endswith("(#1)")  # first under the suggested rules
        # no horizontal scroll: the page and the table fit the window's width
        widths = page.evaluate("""() => {
            const main = document.querySelector('[data-testid="stMain"]');
            const root = document.documentElement;
            return [main.scrollWidth, main.clientWidth, root.scrollWidth, window.innerWidth];
        }""")
        assert widths[0] <= widths[1] and widths[2] <= widths[3], widths
        box = table.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1440
        page.screenshot(path=str(tmp_path / "sroie_rules_overview.png"), full_page=True)
        browser.close()
