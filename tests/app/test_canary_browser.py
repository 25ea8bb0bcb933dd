"""Hostile text reaches no server (SPEC 8b, "text from a file is text"), in a real browser.

Markdown images and links, HTML, KaTeX and bare URLs that point at a local canary HTTP
server sit in every place a file can put text: document ids, field names, values, a
metadata key and its values, the file names (so the model names). The browser opens them
saved as a run through a ``?run=`` link on the first visit of a fresh server (the offer
to reopen it must be there), then uploads them and declares the metadata key; each time
it walks every page and the controls that show file text (the per-slice thresholds and
their "cannot reach ... fully reviewed" warning, the slices table, the holdout choice, the
document picker, the expanders). The canary must receive no request and the page must
hold no link, image or formula made from the files.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from pathlib import Path

import pytest
from browser_setup import CHROMIUM, need_chromium, wait_idle

from kieval_app.serving.headless import CHROMIUM_ARGS, free_port, streamlit_server
from kieval_core.cli import main

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 90_000


class Canary:
    """An HTTP server on a free local port that records every request it receives."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        canary = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server interface
                canary.requests.append(self.path)
                self.send_response(204)
                self.end_headers()

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Canary:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def hostile(url: str) -> list[str]:
    return [
        f"![i]({url}/md-image.png)",
        f"[l]({url}/md-link)",
        f'<img src="{url}/html-image.png">',
        f"{url}/autolink",
        f"see {url.replace('http://', 'www.')}/www and a@b.example",
        "$x^2$ and $$\\sum_i$$",
        f"<style>@import url({url}/css);</style>",
        f":red[alert] ![j]({url}/directive.png)",
    ]


def files(url: str) -> dict[str, bytes]:
    """A ground truth and two prediction files (named after their roles in the upload)
    whose every text is hostile; the metadata key's first value cannot reach 95% with
    automation (half its predictions wrong, all at confidence 0.9), the second can."""
    values = hostile(url)
    field = f"![f]({url}/field.png)"
    meta = f"![m]({url}/meta-key.png)"
    gt, strong, weak = [], [], []
    for i in range(24):
        doc = f"{values[i % len(values)]} #{i}"
        value = values[(i + 1) % len(values)]
        slice_value = values[i % 2]
        gt.append({"doc_id": doc, meta: slice_value, "gt_parse": {field: value, "total": f"{i},000"}})
        wrong = i % 2 == 0
        strong.append({"doc_id": doc, "prediction": {
            field: {"value": value + "?" if wrong else value, "confidence": 0.9},
            "total": {"value": f"{i},000", "confidence": 0.9 if wrong else 0.95}}})
        weak.append({"doc_id": doc, "prediction": {
            field: {"value": value + "!", "confidence": 0.5}, "total": {"value": f"{i}", "confidence": 0.4}}})
    lines = [b"".join(json.dumps(r).encode() + b"\n" for r in records) for records in (gt, strong, weak)]
    return {f"[gt]({url}/gt-name).jsonl": lines[0], f"[m1]({url}/model-one).jsonl": lines[1],
            f"![m2]({url}/model-two.png).jsonl": lines[2], "meta": meta.encode()}


def _idle(page) -> None:
    wait_idle(page, TIMEOUT_MS, settle_ms=700)


def _payload(name: str, data: bytes) -> dict:
    return {"name": name, "mimeType": "application/octet-stream", "buffer": data}


_WHERE = """e => { const ids = []; for (let x = e; x; x = x.parentElement) {
    if (x.dataset && x.dataset.testid) ids.push(x.dataset.testid); }
    return ids.slice(0, 4).join(' < ') + ': ' + e.outerHTML.slice(0, 300); }"""


def _drop(page, role: str, payloads: list[dict]) -> None:
    """Upload into the ground-truth or predictions box once the page shows exactly one."""
    box = page.locator(f'[class*="st-key-upload_{role}_"] input[type=file]')
    for _ in range(TIMEOUT_MS // 250):
        if box.count() == 1:
            break
        page.wait_for_timeout(250)
    box.set_input_files(payloads if role == "pred" else payloads[0])
    _idle(page)


def _nothing_made_from_files(page, canary: Canary, where: str) -> None:
    """No image, link, formula or mail link made from file text; no request (a stylesheet
    import would be one)."""
    host = canary.url.split("//")[1]
    made = page.locator(f'img[src*="{host}"], a[href*="{host}"], link[href*="{host}"], main .katex, '
                        "main a[href^='mailto:'], main a[href*='www.']")
    shown = [made.nth(i).evaluate(_WHERE) for i in range(made.count())]
    assert not shown, (where, shown, canary.requests)
    assert not page.get_by_test_id("stException").count(), where
    assert canary.requests == [], (where, canary.requests)


def _page(page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    page.get_by_role("heading", level=1).first.wait_for(timeout=TIMEOUT_MS)
    _idle(page)


def _open_expander(page, label: str) -> None:
    """Open an expander (again, if a redraw under load closed it)."""
    details = page.get_by_test_id("stExpander").filter(has_text=label).first.locator("details")
    for _ in range(3):
        if details.get_attribute("open") is not None:
            return
        details.locator("summary").click()
        _idle(page)
    assert details.get_attribute("open") is not None, f"the expander {label!r} does not open"


def _choose(page, key: str, option: str | re.Pattern) -> None:
    """Choose an option of a selectbox (clicking again if a redraw closed its list)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        page.locator(f".st-key-{key}").get_by_role("combobox").click()
        try:
            page.get_by_role("option", name=option).first.click(timeout=15_000 if attempt < 2 else TIMEOUT_MS)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            _idle(page)
    _idle(page)


def _walk(page, canary: Canary, with_metadata: bool) -> None:
    """Every page, and the controls that show file text."""
    _nothing_made_from_files(page, canary, "Overview")
    for label in ("Every metric, every model", "Load report"):
        _open_expander(page, label)
    _nothing_made_from_files(page, canary, "Overview, expanders")
    _page(page, "Documents")
    _choose(page, "docs_pick", re.compile(r"#7"))
    _nothing_made_from_files(page, canary, "Documents")
    _page(page, "Errors")
    _open_expander(page, "substitutions")
    _nothing_made_from_files(page, canary, "Errors")
    _page(page, "Automation")
    if with_metadata:
        _choose(page, "auto_scope", re.compile("^one τ per !"))
        assert page.get_by_text("cannot reach", exact=False).count() >= 1, "no unreachable-slice warning"
        _open_expander(page, "Per slice of documents")
        _open_expander(page, "carry over")
        _choose(page, "auto_holdout", re.compile(" = "))
    _nothing_made_from_files(page, canary, "Automation")
    _page(page, "Compare")
    _nothing_made_from_files(page, canary, "Compare")
    _page(page, "Metrics guide")
    _nothing_made_from_files(page, canary, "Metrics guide")


def test_hostile_text_reaches_no_server(tmp_path, monkeypatch):
    need_chromium()
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("KIEVAL_RUNS_DIR", str(tmp_path / "runs"))
    with Canary() as canary:
        made = files(canary.url)
        meta = made.pop("meta").decode()
        names = list(made)
        on_disk = {}
        for i, (name, data) in enumerate(made.items()):
            on_disk[name] = tmp_path / f"f{i}.jsonl"
            on_disk[name].write_bytes(data)
        preds = [f"{names[i]}={on_disk[names[i]]}" for i in (1, 2)]
        run = str(tmp_path / "runs" / "hostile")
        assert main(["evaluate", "--gt", str(on_disk[names[0]]), "--pred", preds[0], "--pred", preds[1],
                     "--meta", meta, "--bootstrap", "0", "--save-run", run]) == 0
        with streamlit_server(ROOT) as url, sync_playwright() as p:  # a fresh server
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)

            # the first visit of a fresh server through a ?run= link: offered, reopened, walked
            page.goto(url + "?run=hostile")
            page.get_by_role("heading", name="KIEval Workbench").wait_for()
            _idle(page)
            reopen = page.get_by_role("button", name="Reopen the saved run")
            reopen.wait_for()
            reopen.click()
            _idle(page)
            page.get_by_text("Saved run", exact=False).first.wait_for()
            _walk(page, canary, with_metadata=True)

            # the same files uploaded: the one-sided key's notice and its button, then every page
            page.goto(url)
            page.get_by_role("heading", name="KIEval Workbench").wait_for()
            _idle(page)
            _drop(page, "gt", [_payload(names[0], made[names[0]])])
            _drop(page, "pred", [_payload(n, made[n]) for n in names[1:]])
            page.get_by_test_id("stTable").first.wait_for()
            _idle(page)
            _nothing_made_from_files(page, canary, "after the uploads")
            page.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(
                has_text="Reading files").locator("summary").click()
            field = page.locator(".st-key-opt_meta input")
            field.fill(meta)
            field.press("Enter")
            _idle(page)
            _walk(page, canary, with_metadata=True)
            browser.close()
        assert canary.requests == []
