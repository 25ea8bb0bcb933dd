"""The document view in a real browser (Playwright + Debian's Chromium): a generated set of
page images, ground truth and predictions with boxes is uploaded, the view draws the
expected boxes of each status, a click on a box selects its row in the values table and a
click on a row outlines its boxes; the sample's Documents page shows the view out of the box.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from PIL import Image, ImageDraw
from test_e2e_browser import _browser, _idle, _open, _upload, _visit, _wait_text, app_url  # noqa: F401

pytestmark = pytest.mark.e2e

IMAGES_BOX = '[class*="st-key-upload_images_"]'
VIEW = ".st-key-docs_view .js-plotly-plot"
MATCHING = ".st-key-docs_matching .js-plotly-plot"
VALUES = ".st-key-docs_values"
TABLE = ".st-key-docs_table [data-testid=stDataFrame]"
DOC_IN_URL = "() => new URLSearchParams(location.search).get('doc')"


def _leaf(value: str, box: list[int], confidence: float | None = None) -> dict:
    return {"value": value, "bbox": box, **({"confidence": confidence} if confidence is not None else {})}


def _generated_set(folder: Path) -> tuple[Path, Path, Path]:
    """One receipt: 5 values right, a date substituted, an address missed, a tax invented."""
    gt = {"doc_id": "doc1", "fields": {
        "total": _leaf("10.00", [500, 500, 600, 530]), "date": _leaf("01/02/2019", [500, 60, 680, 90]),
        "address": _leaf("JL X", [60, 60, 200, 90]),
        "menu": [{"nm": _leaf("Tea", [60, 200, 200, 230]), "price": _leaf("5.00", [500, 200, 600, 230])},
                 {"nm": _leaf("Pie", [60, 250, 200, 280]), "price": _leaf("5.00", [500, 250, 600, 280])}]}}
    pred = {"doc_id": "doc1", "fields": {
        "total": _leaf("10.00", [500, 500, 600, 530], 0.9),
        "date": _leaf("01/03/2019", [500, 60, 680, 90], 0.4),
        "tax": _leaf("1.00", [500, 540, 600, 570], 0.3),
        "menu": [{"nm": _leaf("Tea", [60, 200, 200, 230], 0.95),
                  "price": _leaf("5.00", [500, 200, 600, 230], 0.9)},
                 {"nm": _leaf("Pie", [60, 250, 200, 280], 0.9),
                  "price": _leaf("5.00", [500, 250, 600, 280], 0.8)}]}}
    (folder / "gt.jsonl").write_text(json.dumps(gt) + "\n", encoding="utf-8")
    (folder / "model_a.jsonl").write_text(json.dumps(pred) + "\n", encoding="utf-8")
    image = Image.new("RGB", (800, 600), "white")
    ImageDraw.Draw(image).text((60, 60), "JL X", fill="black")
    png = io.BytesIO()
    image.save(png, "PNG")
    with zipfile.ZipFile(folder / "pages.zip", "w") as archive:
        archive.writestr("doc1.png", png.getvalue())
    return folder / "gt.jsonl", folder / "model_a.jsonl", folder / "pages.zip"


def _drawn(page) -> dict[tuple[str, str], int]:
    """Boxes drawn per (panel, legend label), counted from the figure the browser holds."""
    traces = page.evaluate(f"""() => document.querySelector('{VIEW}')._fullData
        .filter(t => t.mode === 'lines' && t.name !== 'selected')
        .map(t => [t.xaxis, t.name, Array.from(t.x).filter(v => v === null || Number.isNaN(v)).length])""")
    return {(axis, name): n for axis, name, n in traces}


def _click_box(page, side: str, index: int) -> int:
    """Click the ``index``-th box of a panel (``x`` GT, ``x2`` prediction); its row."""
    page.locator(VIEW).scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    x, y, row = page.evaluate(f"""() => {{
        const gd = document.querySelector('{VIEW}');
        const t = gd._fullData.find(t => t.mode === 'markers' && t.xaxis === '{side}');
        const xa = gd._fullLayout[t.xaxis.replace('x', 'xaxis')];
        const ya = gd._fullLayout[t.yaxis.replace('y', 'yaxis')];
        const r = gd.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(t.x[{index}]), r.top + ya._offset + ya.l2p(t.y[{index}]),
                t.customdata[{index}]];
    }}""")
    page.mouse.click(x, y)
    return int(row)


def _selected_row(page) -> int | None:
    rows = page.locator(f'{VALUES} tr[aria-selected="true"]')
    if not rows.count():
        return None
    return int(rows.first.get_attribute("aria-rowindex")) - 2


def _selected_boxes(page) -> int:
    return page.evaluate(f"""() => {{
        const t = document.querySelector('{VIEW}')._fullData.filter(t => t.name === 'selected');
        return t.reduce((n, s) => n + Array.from(s.x).filter(v => v === null || Number.isNaN(v)).length, 0);
    }}""")


def _wait(page, condition, what: str) -> None:
    for _ in range(240):
        try:
            if condition():
                return
        except Exception:  # the figure or table was being redrawn: look again
            pass
        page.wait_for_timeout(250)
    raise AssertionError(f"{what} never happened")


def test_boxes_by_status_and_click_selects_the_pair(app_url, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    gt, pred, pages = _generated_set(tmp_path)
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        _upload(page, app_url, gt, [pred])
        box = page.locator(IMAGES_BOX).locator("input[type=file]")
        _wait(page, lambda: box.count() == 1, "one images drop zone")  # the old one goes after a run
        box.set_input_files(str(pages))
        _wait_text(page, "pages.zip: 1 page(s) of 1 document(s) loaded")
        _idle(page)
        _open(page, "Documents")
        page.locator(VIEW).wait_for()
        _idle(page)
        assert _drawn(page) == {
            ("x", "correct"): 5, ("x", "substitution (wrong value)"): 1,
            ("x", "addition (missed: the GT box)"): 1,
            ("x2", "correct"): 5, ("x2", "substitution (wrong value)"): 1,
            ("x2", "deletion (spurious: the predicted box)"): 1,
            ("x", "matched group pair (same number on both sides)"): 2,
            ("x2", "matched group pair (same number on both sides)"): 2,
        }
        assert page.evaluate(f"() => document.querySelector('{VIEW}').layout.images.length") == 2
        assert _selected_row(page) is None

        row = _click_box(page, "x2", 1)  # the substituted date, on the prediction's side
        _wait(page, lambda: _selected_row(page) == row, "the clicked box's row selected")
        _wait(page, lambda: _selected_boxes(page) == 2, "the pair outlined on both sides")
        text = page.locator(f'{VALUES} tr[aria-selected="true"]').inner_text()
        assert "01/02/2019" in text and "01/03/2019" in text

        # and back: a row of the table outlines its boxes (the invented tax: one box)
        rows = page.locator(f"{VALUES} tbody tr")
        tax = next(i for i in range(rows.count()) if "1.00" in rows.nth(i).inner_text())
        page.locator(VALUES).scroll_into_view_if_needed()
        grid = page.locator(f"{VALUES} [data-testid='stDataFrame']").bounding_box()
        page.mouse.click(grid["x"] + 16, grid["y"] + 35 * (tax + 1) + 17)
        _wait(page, lambda: _selected_row(page) == tax, "the row selected")
        _wait(page, lambda: _selected_boxes(page) == 1, "the deleted value's box outlined")

        # a click value the page did not draw (a tampered client) changes nothing, raises nothing
        for sent in ("'<b>1</b>'", "1000000", "-1", "true", "[1]", "1.5"):
            page.evaluate(f"() => document.querySelector('{VIEW}').kievalSend('click', {sent})")
            _idle(page)
            assert _selected_row(page) == tax, sent
        assert page.get_by_test_id("stException").count() == 0
        browser.close()


def test_the_sample_documents_page_shows_the_view(app_url):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1024, "height": 900})
        _visit(page, app_url)
        _open(page, "Documents")
        page.locator(VIEW).wait_for()
        _idle(page)
        assert page.get_by_text("a rendering of the receipt's annotation, not a photo").count() == 1
        drawn = _drawn(page)
        assert drawn[("x", "correct")] > 0 and drawn[("x2", "correct")] > 0
        assert page.evaluate(f"() => document.querySelector('{VIEW}').layout.images.length") == 2

        # a chart a screen below is drawn when it comes near: the matching, far below the view
        matching = page.locator(".st-key-docs_matching")
        assert page.locator(MATCHING).count() == 0 and matching.locator(".kieval-live").is_hidden()
        matching.scroll_into_view_if_needed()
        page.locator(MATCHING).wait_for()
        page.locator(".st-key-docs_next").scroll_into_view_if_needed()

        # Next reruns the document's fragment only: the address, the picker, the heading and
        # the view follow the next document; the document table stays drawn (the same element)
        first = page.evaluate(DOC_IN_URL)
        for kept in (TABLE, VIEW, MATCHING):
            page.evaluate(f"() => {{ document.querySelector('{kept}').__kept = 1; }}")
        page.locator(".st-key-docs_next button").click()
        _wait(page, lambda: page.evaluate(DOC_IN_URL) != first, "the address naming the next document")
        _idle(page)
        shown = page.evaluate(DOC_IN_URL)
        assert page.get_by_role("heading", name=f"Document {shown}").count() == 1
        assert page.locator(".st-key-docs_pick input").first.input_value() == shown
        # the table is the same element; both charts too, redrawn in place for the next document
        for kept in (TABLE, VIEW, MATCHING):
            assert page.evaluate(f"() => document.querySelector('{kept}').__kept") == 1, kept
        model = "simulated-strong"
        # far below, the matching still holds the first document, hidden until it comes near
        held = page.evaluate(f"() => document.querySelector('{MATCHING}').dataset.drawn")
        assert held == f"{model}/{first}"
        assert page.locator(MATCHING).is_hidden()
        for chart, revision in ((VIEW, f"{model}/{shown}/1/None"), (MATCHING, f"{model}/{shown}")):
            page.locator(chart).scroll_into_view_if_needed()
            drawn_now = f"() => document.querySelector('{chart}').dataset.drawn"
            _wait(page, lambda js=drawn_now, r=revision: page.evaluate(js) == r, f"{chart} drawn anew")
            assert page.locator(chart).is_visible()
        drawn = _drawn(page)
        assert drawn[("x", "correct")] > 0 and drawn[("x2", "correct")] > 0
        browser.close()


def test_plotly_js_is_served_from_the_plotly_package_and_nothing_outside_it(app_url):  # noqa: F811
    """Gzipped once by the app, and sent as it is: the server's gzip layer does not compress
    it again for every visitor (0.13 s of its CPU each time)."""
    import gzip

    from playwright.sync_api import sync_playwright

    from kieval_app.live_chart import NAME, PLOTLY_GZ, PLOTLY_JS, PLOTLY_ROOT

    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page()
        _visit(page, app_url)
        _open(page, "Documents")  # the first chart drawn declares the assets
        page.locator(VIEW).wait_for()
        assets = f"{app_url}_stcore/bidi-components/{NAME}/"
        served = page.request.get(assets + PLOTLY_GZ, headers={"Accept-Encoding": "gzip"})
        assert served.status == 200 and served.headers["content-type"] == "application/gzip"
        assert "content-encoding" not in served.headers
        assert gzip.decompress(served.body()) == (PLOTLY_ROOT / "package_data" / PLOTLY_JS).read_bytes()
        assert page.request.get(assets + PLOTLY_JS).status == 404
        for outside in ("../__init__.py", "%2e%2e/__init__.py", "/etc/passwd"):
            assert page.request.get(assets + outside).status in (400, 404), outside
        browser.close()
