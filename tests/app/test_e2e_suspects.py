"""The Suspect labels page in a real browser (Playwright driving Debian's Chromium): open a
suspect, mark its label wrong, see the figures with the fix beside the original, and
download the fix file.

Skipped only when ``/usr/bin/chromium`` is absent outside CI (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_setup import CHROMIUM, need_chromium, wait_idle

from kieval_app.serving.headless import CHROMIUM_ARGS, streamlit_server
from kieval_core import evaluate
from kieval_core.evaluate import with_label_fixes
from kieval_core.figures.suspects import fix_rows_of, suspect_key
from kieval_core.review.label_fixes import parse_fixes

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
TIMEOUT_MS = 60_000
MODELS = {"sim_strong": "simulated-strong", "sim_llm": "simulated-llm", "sim_weak": "simulated-weak"}


@pytest.fixture(scope="module")
def app_url():
    need_chromium()
    with streamlit_server(ROOT) as url:
        yield url


def test_open_a_suspect_mark_it_see_the_figures_with_the_fix_and_download_the_fix_file(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    sample = evaluate(SAMPLE / "cord_v2_gt.jsonl", {n: SAMPLE / f"{m}.jsonl" for m, n in MODELS.items()})
    second = sample.suspects.iloc[1]
    verdicts = {suspect_key(second): {"verdict": "wrong", "fixed_value": second["proposed_value"]}}
    fixed = with_label_fixes(sample, parse_fixes(fix_rows_of(sample.suspects, verdicts), "test"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(app_url)
        page.get_by_role("heading", name="KIEval Workbench").wait_for()
        wait_idle(page, TIMEOUT_MS)
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Suspect labels").click()
        page.get_by_role("heading", level=1, name="Suspect labels").wait_for()
        wait_idle(page, TIMEOUT_MS)
        # open the second suspect with the picker
        picker = page.locator(".st-key-sus_pick")
        picker.get_by_role("combobox").click()
        page.get_by_role("option").nth(1).click()
        wait_idle(page, TIMEOUT_MS)
        heading = page.get_by_role("heading", level=3).filter(has_text=second["doc_id"]).first
        heading.wait_for()
        assert second["entity_type"] in heading.inner_text()
        # mark it: the label is wrong, use the models' value
        form = page.locator(".st-key-sus_form, [data-testid='stForm']").first
        form.get_by_text("label is wrong: use this value").click()
        form.get_by_role("textbox").nth(1).fill("the receipt agrees with the models")
        form.get_by_role("button", name="Save verdict").click()
        page.get_by_role("heading", name="Figures with the fixes").wait_for()
        wait_idle(page, TIMEOUT_MS)
        table = page.get_by_test_id("stTable").first
        text = " ".join(table.inner_text().split())
        assert "as given" in text and "with fixes" in text and "KIEval_Aligned" in text
        for name in MODELS.values():  # KIEval_Aligned as given and with the fix, side by side
            before, after = sample.models[name].aligned, fixed.models[name].aligned
            assert f"KIEval_Aligned {before:.2%} {after:.2%}" in text, text
        # download the fix file
        with page.expect_download() as download:
            page.get_by_role("button", name="Download the fix file").click()
        target = tmp_path / download.value.suggested_filename
        download.value.save_as(target)
        rows = json.loads(target.read_text(encoding="utf-8"))
        expected = fix_rows_of(sample.suspects, verdicts)
        expected[0]["note"] = "the receipt agrees with the models"
        assert rows == expected
        browser.close()
