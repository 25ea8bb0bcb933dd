"""Every page at 1,024 px in a real browser (Playwright + Debian's Chromium), on both built-in
samples: no text cut. A chart's text must lie inside the chart; a label inside a box that hides
what overflows must fit in it. Found this way at 1,024 px: the Documents page's "Only with
errors" toggle read "Only ...", its group-matching labels ran off both sides of the chart,
the trade-off chart lost its axis title's closing parenthesis and the Compare page's "A" / "B"
links showed their icons only.
"""

from __future__ import annotations

import pytest
from test_e2e_browser import _browser, _idle, _visit, app_url  # noqa: F401

pytestmark = pytest.mark.e2e

PAGES = ["Overview", "Documents", "Errors", "Automation", "Compare", "Metrics guide"]

#: Texts cut on the page: a plotly text outside its chart, or a text node that reaches
#: beyond an ancestor (up to 8 levels) that hides overflow. Streamlit's uploader cuts its
#: own list of file types with an ellipsis (the full list is in the box's help): left out.
CUT_TEXT = """() => {
  const cut = [];
  for (const plot of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    const box = plot.querySelector('svg.main-svg').getBoundingClientRect();
    for (const text of plot.querySelectorAll('svg text')) {
      const r = text.getBoundingClientRect();
      if (!text.textContent.trim() || r.width === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1
          || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        cut.push('chart: ' + text.textContent);
    }
  }
  const uploader = '[data-testid="stFileUploaderDropzoneInstructions"]';
  for (const element of document.querySelectorAll('[data-testid="stMain"] *')) {
    if (element.closest('.js-plotly-plot') || element.closest(uploader)) continue;
    for (const node of element.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE || !node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      if (r.width === 0) continue;
      let holder = element;
      for (let i = 0; i < 8 && holder; i++, holder = holder.parentElement) {
        const style = getComputedStyle(holder);
        if (style.overflowX !== 'hidden' && style.overflowX !== 'clip') continue;
        const b = holder.getBoundingClientRect();
        if (r.right > b.right + 1 || r.left < b.left - 1) {
          cut.push('label: ' + node.textContent);
          break;
        }
      }
    }
  }
  return cut;
}"""


def _go(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    _idle(page)
    page.wait_for_timeout(800)  # plotly and the grids draw after the run


def test_no_text_is_cut_at_1024_px(app_url):  # noqa: F811
    from playwright.sync_api import sync_playwright

    cut = []
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1024, "height": 900})
        _visit(page, app_url)
        for sample in ("simulated", "official"):
            if sample == "official":
                _go(page, "Overview")
                page.locator('[class*="st-key-sample_"] button').first.click()
                page.get_by_text("Open the other sample: CORD v2 validation").wait_for()
                _idle(page)
            for title in PAGES:
                _go(page, title)
                cut += [f"{sample} / {title}: {text}" for text in page.evaluate(CUT_TEXT)]
        browser.close()
    assert cut == []
