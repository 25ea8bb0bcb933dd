"""Interaction latency of the dashboard against Streamlit's own floor, in one run.

    python bench/bench_latency.py [--quick] [--app-root DIR] [--skip-10k] [--rounds N] [--json OUT]

Two apps are measured on this machine, each in its own ``streamlit run`` server and a
headless Chromium (Debian's, ``/usr/bin/chromium``):

- the **floor**, ``bench/floor_app/app.py``: a minimal three-page ``st.navigation`` app
  (a 100-row dataframe, a 2,000-point plotly chart, a slider and buttons): what any
  Streamlit app costs here;
- **this app**, ``app.py`` of ``--app-root`` (default: the checkout this script is in),
  on its built-in sample (100 receipts x 3 models) and, unless ``--skip-10k``, at 10,000
  receipts x 3 models: the sample's ground truth and three prediction files replicated
  100 times with suffixed document ids, uploaded through the app's own file uploaders.

Actions, each repeated ``--repeats`` times (15; 3 with ``--quick``) after a warm-up:

- page switch: a click on a sidebar navigation link, cycling through every page;
  reported per destination page and pooled;
- slider step: ArrowRight, then ArrowLeft, in turn, on a focused slider (the row keeps
  its name "slider step (ArrowRight)"); button rerun: a click on a button;
- first load on a cold server: the server's start (from spawning ``streamlit run`` until
  its health check answers) plus the opening of the page until the first numbers are
  visible (this app: the value of the first-number metric card; the floor: its table);
  a new server for every repeat;
- first load of a new session on a warm server: a new browser context, from opening the
  URL until the first numbers are visible;
- at 10,000 receipts: the ground-truth upload until the app says it is loaded, and the
  upload of the three prediction files until the first number shows (wall time and the
  server's CPU seconds), time-boxed by ``--upload-timeout``;
- SROIE (column ``sroie``): its ground truth and three real systems (Textract, GPT-4o,
  Claude Haiku) from ``--sroie-dir`` uploaded, then the interactions;
- the **document view** (column ``view``): 20 generated documents, each with a page image
  and 200 boxes (100 ground-truth values, 100 predicted), uploaded with their images;
  opening the Documents page, and moving to the next document (its image and boxes drawn).

An interaction's latency runs from the browser's event of the click or key press to the
first animation frame after the last script run it caused has ended (the run messages
on the WebSocket and the root element's script state; see ``streamlit_harness.py``).
Percentiles are linear interpolation between closest ranks. The idle detection is
checked on every run: a floor button that sleeps ``FLOOR_SLEEP_MS`` in its script must
measure at least that, and its overhead over the sleep must be close to the floor's
plain button.

With ``--rounds N`` every column is measured N times in turn (the floor, then each app
column, again), so the apps share the machine's load and their ratios hold on a shared
machine. Prints a markdown table (p50 / p95), each app column's ratios to the floor (the
issue's bars: page switch, cold first visit, the Automation τ step against the floor's
page switch) and writes every sample to ``--json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import streamlit_harness as harness  # noqa: E402
from app_facts import (  # noqa: E402
    APP_DATA_CAPTION,
    APP_FIRST_NUMBER,
    APP_GT_LOADED,
    APP_PAGES,
    APP_SCRIPT,
    APP_UPLOAD_GT,
    APP_UPLOAD_PREDICTIONS,
)
from streamlit_harness import log  # noqa: E402

# ==========================================================================================
# CONFIGURATION: every page title, heading, widget key and text this script relies on.
# After a refactor of the app, adjust this block and app_facts.py only.
# ==========================================================================================
APP_HOME = "Overview"  # the page the app opens on (it holds the uploaders)
APP_SLIDER = ("Automation", "auto_tau")  # (page title, widget key) of the slider stepped
# The slider shows once this option (widget key, option text) is picked: τ set by hand.
APP_SLIDER_SETUP = ("auto_mode", "threshold")
APP_BUTTON = ("Documents", "docs_next")  # (page title, widget key) of the button
# The sample files replicated for the 10,000-receipt scale (relative to --app-root), the
# key of the document id in their JSONL records, and the number of copies.
SCALE_GT = "sample_data/cord_v2_gt.jsonl"
SCALE_PREDICTIONS = ("sample_data/sim_strong.jsonl", "sample_data/sim_llm.jsonl",
                     "sample_data/sim_weak.jsonl")
SCALE_DOC_ID = "doc_id"
SCALE_COPIES = 100
# Real data (column ``sroie``): SROIE's ground truth and three real systems, uploaded through
# the Overview page's uploaders (skipped when /work/shared or --sroie-dir is absent).
SROIE_DIR = HERE.parent.parent / "shared" / "data" / "sroie"
SROIE_GT = "sroie_test_gt.jsonl"
SROIE_PREDICTIONS = tuple(f"predictions/{name}.jsonl" for name in (
    "aws_textract_analyzeexpense", "gpt4o_vision_themurtez", "claude_haiku_4.5"))
# The model picked in the sidebar (widget key, option) before the interactions: Claude
# Haiku gives no confidences (no τ slider), whichever model the upload order puts first.
SROIE_MODEL = ("model", "aws_textract_analyzeexpense")
# The document view: documents with a page image and boxes, uploaded with the images box.
APP_UPLOAD_IMAGES = '[class*="st-key-upload_images_"]'
VIEW_DOCUMENTS, VIEW_BOXES_PER_SIDE = 20, 100
VIEW_LOADED = f"page(s) of {VIEW_DOCUMENTS} document(s) loaded"
VIEW_NEXT_ROW = f"next document (page image, {2 * VIEW_BOXES_PER_SIDE} boxes)"

# The floor app (bench/floor_app/app.py).
FLOOR_SCRIPT = HERE / "floor_app" / "app.py"
FLOOR_PAGES = {"Table": "Table", "Chart": "Chart", "Controls": "Controls"}
FLOOR_HOME = "Table"
FLOOR_FIRST_SHOWN = "floor_table"  # key of the container of its table
FLOOR_SLIDER = ("Controls", "floor_slider")
FLOOR_BUTTON = ("Controls", "floor_button")
FLOOR_SLEEP_BUTTON = ("Controls", "floor_sleep")  # sleeps FLOOR_SLEEP_MS: the self-check
FLOOR_SLEEP_MS = 500
# ==========================================================================================

TIMEOUT_MS = 180_000  # one action, or one page load, at most
#: Redoes a unit of measurement that other processes disturbed (set up in main()).
GUARD = harness.Guard(enabled=False)
SELF_CHECK_TOLERANCE_MS = 100  # |overhead of the sleeping button - plain button| at p50


@dataclass
class Target:
    """One app under test and how to see that it has drawn its first numbers."""

    name: str
    script: Path
    cwd: Path
    pages: dict[str, str]
    home: str
    slider: tuple[str, str]
    button: tuple[str, str]
    first_shown: Callable  # page -> the locator that becomes visible with the first numbers
    env: dict[str, str] = field(default_factory=dict)
    slider_setup: tuple[str, str] | None = None  # (widget key, option text) that shows the slider


class Results:
    """Samples per (column, row); a column is an app at a scale."""

    def __init__(self) -> None:
        self.samples: dict[str, dict[str, list[float]]] = {}
        self.runs: dict[str, dict[str, list[int]]] = {}
        self.notes: dict[str, dict[str, str]] = {}

    def add(self, column: str, row: str, value: float, runs: int | None = None) -> None:
        self.samples.setdefault(column, {}).setdefault(row, []).append(value)
        if runs is not None:
            self.runs.setdefault(column, {}).setdefault(row, []).append(runs)

    def note(self, column: str, row: str, text: str) -> None:
        self.notes.setdefault(column, {})[row] = text

    def as_json(self) -> dict:
        out: dict = {}
        for column in {*self.samples, *self.notes}:
            rows = {}
            for row, values in self.samples.get(column, {}).items():
                runs = self.runs.get(column, {}).get(row)
                rows[row] = {**harness.summary(values), "samples": [round(v, 1) for v in values],
                             "runs_per_action": round(sum(runs) / len(runs), 2) if runs else None}
            for row, text in self.notes.get(column, {}).items():
                rows.setdefault(row, {})["note"] = text
            out[column] = rows
        return out


# --- one session -----------------------------------------------------------------------------


def open_session(browser, server, target: Target):
    """A new session on ``server``: returns the page and the seconds from opening the URL
    until the first numbers are visible; waits until the app is idle."""
    page = harness.new_page(browser, TIMEOUT_MS)
    start = time.perf_counter()
    page.goto(server.url)
    target.first_shown(page).wait_for(state="visible")
    seconds = time.perf_counter() - start
    harness.wait_idle(page, TIMEOUT_MS)
    return page, seconds


def close(page) -> None:
    page.context.close()


def heading(page) -> str:
    """The page's first level-1 heading."""
    return page.get_by_role("heading", level=1).first.inner_text().strip()


def check_heading(page, title: str, expected: str) -> None:
    shown = heading(page)
    if not shown.startswith(expected):
        msg = f"after clicking {title!r} the heading is {shown!r}, not {expected!r}: check CONFIGURATION"
        raise RuntimeError(msg)


def switch(page, target: Target, title: str) -> dict:
    """Click the navigation link of ``title``; the timed result; the heading is checked."""
    link = harness.nav_link(page, title)
    result = harness.timed_action(page, link.click, TIMEOUT_MS)
    check_heading(page, title, target.pages[title])
    return result


def exceptions_shown(page) -> int:
    return page.locator('[data-testid="stException"]').count()


def measure_page_switches(page, target: Target, column: str, results: Results, repeats: int) -> None:
    """One warm-up cycle through every page, then ``repeats`` timed cycles."""
    titles = list(target.pages)
    start = titles.index(target.home)
    cycle = titles[start + 1:] + titles[: start + 1]  # from the page after home, back home
    for title in cycle:  # warm-up
        switch(page, target, title)
    exceptions = 0

    def one_cycle():
        return [(title, switch(page, target, title), exceptions_shown(page)) for title in cycle]

    for i in range(repeats):
        for title, result, shown in GUARD.run(one_cycle, f"{column}: page-switch cycle"):
            results.add(column, f"page switch → {title}", result["ms"], result["runs"])
            results.add(column, "page switch, all pages", result["ms"], result["runs"])
            exceptions += shown
        log(f"{column}: page-switch cycle {i + 1}/{repeats}")
    if exceptions:
        results.note(column, "exceptions", f"{exceptions} exception boxes seen while switching pages")


def measure_widget(page, target: Target, column: str, results: Results, row: str,
                   where: tuple[str, str], repeats: int, warmup: int = 2) -> None:
    """Step a slider (ArrowRight) or click a button ``warmup + repeats`` times."""
    title, key = where
    if not heading(page).startswith(target.pages[title]):
        switch(page, target, title)
    if where == target.slider and target.slider_setup:
        setup_key, option = target.slider_setup
        harness.keyed(page, setup_key).get_by_text(option, exact=True).click()
        harness.wait_idle(page, TIMEOUT_MS)
    widget = harness.keyed(page, key)
    slider = widget.get_by_role("slider")
    if where == target.slider:
        # the run can end before the browser has drawn the slider: counting at once then found
        # none and clicked the widget's help icon, which starts no run (the step never settled)
        slider.wait_for()
    if slider.count():
        slider.focus()
        # right, left, right...: every press a step (a slider with few steps, SROIE's τ for
        # Textract, reached its end and a press there started no run); left first at the end
        now, low, high = (slider.get_attribute(f"aria-value{a}") for a in ("now", "min", "max"))
        at_end = now is not None and now == high != low
        keys = itertools.cycle(("ArrowLeft", "ArrowRight") if at_end else ("ArrowRight", "ArrowLeft"))
        action = lambda: slider.press(next(keys))  # noqa: E731
    else:
        button = widget.get_by_role("button")
        if not button.is_enabled():
            results.note(column, row, "disabled")
            return
        action = button.click
    for _ in range(warmup):
        harness.timed_action(page, action, TIMEOUT_MS)
    done = 0
    while done < repeats:  # in chunks of at most 5, each guarded
        chunk = min(5, repeats - done)
        for result in GUARD.run(lambda n=chunk: [harness.timed_action(page, action, TIMEOUT_MS)
                                                  for _ in range(n)], f"{column}: {row}"):
            results.add(column, row, result["ms"], result["runs"])
        done += chunk
    log(f"{column}: {row} done")


# --- first loads -----------------------------------------------------------------------------


def measure_cold_loads(browser, target: Target, column: str, results: Results, repeats: int) -> None:
    """Spawn a server, open a session, stop the server; one warm-up (file caches)."""

    def one_cold_load() -> tuple[float, float]:
        with harness.streamlit_server(target.script, target.cwd, target.env) as server:
            page, page_seconds = open_session(browser, server, target)
            close(page)
        started = server.healthy - server.spawned
        return started + page_seconds, started

    for i in range(1 + repeats):
        total, started = GUARD.run(one_cold_load, f"{column}: cold first load")
        if i:
            results.add(column, "first load, cold server (s)", total)
            results.add(column, "first load, cold server: server start only (s)", started)
    log(f"{column}: cold first loads done")


def measure_warm_sessions(browser, server, target: Target, column: str, results: Results,
                          repeats: int) -> None:

    def one_session() -> float:
        page, seconds = open_session(browser, server, target)
        close(page)
        return seconds

    for i in range(1 + repeats):
        seconds = GUARD.run(one_session, f"{column}: new session")
        if i:
            results.add(column, "first load, new session on a warm server (s)", seconds)
    log(f"{column}: warm new sessions done")


def measure_target(browser, target: Target, results: Results, repeats: int, column: str,
                   self_check: bool = False) -> None:
    """Cold loads, then one warm server: new sessions, page switches, slider, button."""
    measure_cold_loads(browser, target, column, results, repeats)
    with harness.streamlit_server(target.script, target.cwd, target.env) as server:
        measure_warm_sessions(browser, server, target, column, results, repeats)
        page, _ = open_session(browser, server, target)
        try:
            measure_interactions(page, target, column, results, repeats)
            if self_check:
                measure_widget(page, target, column, results, SLEEP_ROW, FLOOR_SLEEP_BUTTON, repeats)
        finally:
            close(page)


def measure_interactions(page, target: Target, column: str, results: Results, repeats: int) -> None:
    measure_page_switches(page, target, column, results, repeats)
    measure_widget(page, target, column, results, "slider step (ArrowRight)", target.slider, repeats)
    measure_widget(page, target, column, results, "button rerun", target.button, repeats)


# --- 10,000 receipts -------------------------------------------------------------------------


def scaled_files(app_root: Path, directory: Path, copies: int) -> tuple[Path, list[Path]]:
    """The sample's files with every record repeated ``copies`` times, ids suffixed."""

    def replicate(source: Path) -> Path:
        records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line]
        target = directory / f"{source.stem}_x{copies}{source.suffix}"
        with target.open("w", encoding="utf-8") as out:
            for k in range(copies):
                for record in records:
                    copy = dict(record)
                    copy[SCALE_DOC_ID] = f"{record[SCALE_DOC_ID]}_c{k:03d}"
                    out.write(json.dumps(copy, ensure_ascii=False) + "\n")
        return target

    return replicate(app_root / SCALE_GT), [replicate(app_root / p) for p in SCALE_PREDICTIONS]


def measure_at_scale(browser, target: Target, results: Results, repeats: int, upload_timeout_s: float,
                     column: str) -> None:
    """Upload the replicated files into a fresh server, then the interactions."""
    with tempfile.TemporaryDirectory(prefix="kieval_bench_") as tmp:
        gt, predictions = scaled_files(target.cwd, Path(tmp), SCALE_COPIES)
        measure_uploaded(browser, target, results, repeats, upload_timeout_s, column, gt, predictions)


def measure_uploaded(browser, target: Target, results: Results, repeats: int, upload_timeout_s: float,
                     column: str, gt: Path, predictions: list[Path],
                     model: tuple[str, str] | None = None) -> None:
    """Upload ``gt`` and ``predictions`` into a fresh server, pick ``model`` (the widget key
    of the sidebar's model picker, the option), then the interactions."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with harness.streamlit_server(target.script, target.cwd, target.env) as server:
        page, _ = open_session(browser, server, target)
        try:
            uploaders = (page.locator(APP_UPLOAD_GT), page.locator(APP_UPLOAD_PREDICTIONS))
            # the ground truth: until the app says it is read
            cpu = server.cpu_seconds()
            start = time.perf_counter()
            uploaders[0].locator("input[type=file]").set_input_files(str(gt))
            page.get_by_text(APP_GT_LOADED).wait_for(timeout=upload_timeout_s * 1000)
            results.add(column, "upload ground truth → loaded (s)", time.perf_counter() - start)
            harness.wait_idle(page, TIMEOUT_MS)
            results.note(column, "upload ground truth → loaded (s)",
                         f"server CPU {server.cpu_seconds() - cpu:.1f} s")
            log(f"{column}: ground truth loaded")
            # the predictions: until the first number shows
            row = f"upload {len(predictions)} prediction files → first number (s)"
            foreign = harness.ForeignLoad().start()
            cpu = server.cpu_seconds()
            start = time.perf_counter()
            uploaders[1].locator("input[type=file]").set_input_files([str(p) for p in predictions])
            try:
                target.first_shown(page).wait_for(state="visible", timeout=upload_timeout_s * 1000)
            except PlaywrightTimeout:
                results.note(column, row, f"> {upload_timeout_s:.0f} s (time-boxed; server CPU "
                                          f"{server.cpu_seconds() - cpu:.0f} s by then)")
                log(f"{column}: no number after {upload_timeout_s:.0f} s: skipping its interactions")
                return
            seconds = time.perf_counter() - start
            results.add(column, row, seconds)
            results.note(column, row, f"server CPU {server.cpu_seconds() - cpu:.1f} s; other processes "
                                      f"{foreign.stop()['cores_on_average']} cores meanwhile")
            log(f"{column}: first number {seconds:.0f} s after the upload")
            harness.wait_idle(page, TIMEOUT_MS)
            check_caption(page, gt.name, len(predictions))
            log(f"{column}: predictions evaluated")
            if model is not None:
                harness.keyed(page, model[0]).click()
                page.get_by_role("option", name=model[1], exact=True).click()
                harness.wait_idle(page, TIMEOUT_MS)
            measure_interactions(page, target, column, results, repeats)
        finally:
            close(page)


def sroie_files(directory: Path) -> tuple[Path, list[Path]] | None:
    """SROIE's ground truth and the three systems' predictions, or None when absent."""
    gt, predictions = directory / SROIE_GT, [directory / p for p in SROIE_PREDICTIONS]
    return (gt, predictions) if all(p.is_file() for p in (gt, *predictions)) else None


def view_files(directory: Path) -> tuple[Path, Path, Path]:
    """Documents of 20 lines x 5 values, every value boxed, and a page image each; the
    prediction gets one value in ten wrong and one in twenty missing (seeded)."""
    import io
    import random
    import zipfile

    from PIL import Image, ImageDraw

    rng = random.Random(18)
    gt_rows, pred_rows = [], []
    images = io.BytesIO()
    with zipfile.ZipFile(images, "w") as archive:
        for d in range(VIEW_DOCUMENTS):
            doc_id = f"view_{d:03d}"
            page = Image.new("L", (1240, 1754), 255)
            draw = ImageDraw.Draw(page)
            gt_lines, pred_lines = [], []
            for line in range(VIEW_BOXES_PER_SIDE // 5):
                gt_line, pred_line = {}, {}
                for field_index, name in enumerate(("code", "name", "count", "price", "total")):
                    value = f"{name[:2].upper()}{rng.randrange(10_000)}"
                    x0, y0 = 80 + 220 * field_index, 120 + 78 * line
                    box = [x0, y0, x0 + 180, y0 + 40]
                    draw.text((x0 + 4, y0 + 10), value, fill=0)
                    gt_line[name] = {"value": value, "bbox": box}
                    r = rng.random()
                    if r < 0.05:
                        continue
                    shown = value[:-1] + "0" if r < 0.15 else value
                    pred_line[name] = {"value": shown, "confidence": round(rng.random(), 3), "bbox": box}
                gt_lines.append(gt_line)
                pred_lines.append(pred_line)
            gt_rows.append(json.dumps({"doc_id": doc_id, "fields": {"line": gt_lines}}))
            pred_rows.append(json.dumps({"doc_id": doc_id, "fields": {"line": pred_lines}}))
            png = io.BytesIO()
            page.save(png, "PNG")
            archive.writestr(f"{doc_id}.png", png.getvalue())
    gt, pred = directory / "view_gt.jsonl", directory / "view_model.jsonl"
    zipped = directory / "view_pages.zip"
    gt.write_text("\n".join(gt_rows) + "\n", encoding="utf-8")
    pred.write_text("\n".join(pred_rows) + "\n", encoding="utf-8")
    zipped.write_bytes(images.getvalue())
    return gt, pred, zipped


def measure_document_view(browser, target: Target, results: Results, repeats: int, column: str) -> None:
    """Upload documents with page images and 200 boxes each, then open the Documents page
    and step through the documents with its Next button."""
    with tempfile.TemporaryDirectory(prefix="kieval_bench_view_") as tmp:
        gt, pred, pages = view_files(Path(tmp))
        with harness.streamlit_server(target.script, target.cwd, target.env) as server:
            page, _ = open_session(browser, server, target)
            try:
                for box, files, done in ((APP_UPLOAD_GT, str(gt), APP_GT_LOADED),
                                         (APP_UPLOAD_PREDICTIONS, [str(pred)], None),
                                         (APP_UPLOAD_IMAGES, str(pages), VIEW_LOADED)):
                    harness.wait_idle(page, TIMEOUT_MS)
                    page.locator(box).locator("input[type=file]").last.set_input_files(files)
                    if done:
                        page.get_by_text(done).first.wait_for(timeout=TIMEOUT_MS)
                    else:
                        target.first_shown(page).wait_for(state="visible", timeout=TIMEOUT_MS)
                harness.wait_idle(page, TIMEOUT_MS)
                log(f"{column}: {VIEW_DOCUMENTS} documents with page images loaded")
                for i in range(1 + repeats):  # opening the Documents page (from the Overview)
                    result = GUARD.run(lambda: switch(page, target, "Documents"), f"{column}: open Documents")
                    if i:
                        results.add(column, "page switch → Documents", result["ms"], result["runs"])
                    switch(page, target, target.home)
                switch(page, target, "Documents")
                measure_widget(page, target, column, results, VIEW_NEXT_ROW, target.button,
                               min(repeats, VIEW_DOCUMENTS - 3))
            finally:
                close(page)


def check_caption(page, gt_name: str, n: int) -> None:
    caption = page.get_by_text(re.compile(APP_DATA_CAPTION)).first.inner_text()
    match = re.search(APP_DATA_CAPTION, caption)
    if not match or match[1] != gt_name or int(match[2]) != n:
        msg = f"the app shows {caption!r} after uploading {gt_name} and {n} prediction files"
        raise RuntimeError(msg)


# --- report ---------------------------------------------------------------------------------

SLEEP_ROW = f"button sleeping {FLOOR_SLEEP_MS} ms (self-check)"
COLUMNS = {"floor": "Floor (minimal app)", "sample": "This app, sample (100 × 3)",
           "sroie": "This app, SROIE (347 × 3 real systems)",
           "view": f"This app, {VIEW_DOCUMENTS} documents with page images and 200 boxes",
           "10k": "This app, 10,000 × 3"}


def self_check(results: Results) -> dict:
    """The sleeping button must take at least its sleep, and its overhead over the sleep
    must be within the tolerance of the plain button's latency (both on the floor)."""
    sleeping = results.samples.get("floor", {}).get(SLEEP_ROW, [])
    plain = results.samples.get("floor", {}).get("button rerun", [])
    if not sleeping or not plain:
        return {"passed": False, "reason": "not measured"}
    overhead = harness.percentile(sleeping, 50) - FLOOR_SLEEP_MS
    plain_p50 = harness.percentile(plain, 50)
    at_least = min(sleeping) >= FLOOR_SLEEP_MS
    close_enough = abs(overhead - plain_p50) <= SELF_CHECK_TOLERANCE_MS
    return {
        "sleep_ms": FLOOR_SLEEP_MS,
        "measured_min_ms": round(min(sleeping), 1),
        "measured_p50_ms": round(harness.percentile(sleeping, 50), 1),
        "overhead_p50_ms": round(overhead, 1),
        "plain_button_p50_ms": round(plain_p50, 1),
        "tolerance_ms": SELF_CHECK_TOLERANCE_MS,
        "every_sample_at_least_the_sleep": at_least,
        "overhead_matches_plain_button": close_enough,
        "passed": at_least and close_enough,
    }


def _cell(results: Results, column: str, row: str) -> str:
    values = results.samples.get(column, {}).get(row)
    note = results.notes.get(column, {}).get(row)
    if not values:
        return note or "–"
    seconds = row.endswith("(s)")
    p50, p95 = harness.percentile(values, 50), harness.percentile(values, 95)
    if len(values) == 1:
        text = f"{p50:.1f}" if seconds else f"{p50:.0f}"
    else:
        text = f"{p50:.1f} / {p95:.1f}" if seconds else f"{p50:.0f} / {p95:.0f}"
    runs = results.runs.get(column, {}).get(row)
    if runs and sum(runs) / len(runs) > 1.05:
        text += f" ({sum(runs) / len(runs):.1f} runs)"
    return f"{text} ({note})" if note else text


#: The issue's bars (issue 34): (what, this app's row, the floor's row); each at most 2x.
BARS = (
    ("page switch", "page switch, all pages", "page switch, all pages"),
    ("first visit, cold server", "first load, cold server (s)", "first load, cold server (s)"),
    ("Automation τ step / floor page switch", "slider step (ArrowRight)", "page switch, all pages"),
)


def ratios(results: Results) -> dict:
    """Per app column and bar: this app's p50 over the floor's p50 (same run)."""
    floor = results.samples.get("floor", {})
    out: dict = {}
    for column, rows in results.samples.items():
        if column == "floor":
            continue
        for what, row, floor_row in BARS:
            if rows.get(row) and floor.get(floor_row):
                ratio = harness.percentile(rows[row], 50) / harness.percentile(floor[floor_row], 50)
                out.setdefault(column, {})[what] = round(ratio, 2)
    return out


def markdown(results: Results) -> str:
    columns = [c for c in COLUMNS if c in results.samples or c in results.notes]
    rows: list[str] = []
    for column in columns:
        for row in [*results.samples.get(column, {}), *results.notes.get(column, {})]:
            if row not in rows and row != "exceptions":
                rows.append(row)
    order = ["page switch, all pages"]
    order += [r for r in rows if r.startswith("page switch → ")]
    order += ["slider step (ArrowRight)", "button rerun", VIEW_NEXT_ROW, SLEEP_ROW]
    order += [r for r in rows if r.startswith("first load")]
    order += [r for r in rows if r.startswith("upload")]
    lines = ["| action (ms: p50 / p95; (s): seconds) | " + " | ".join(COLUMNS[c] for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for row in [r for r in order if r in rows]:
        lines.append(f"| {row} | " + " | ".join(_cell(results, c, row) for c in columns) + " |")
    return "\n".join(lines)


def measure_rounds(browser, args, floor, app, results, busy, sroie, repeats) -> None:
    """Every column chosen, --rounds times in turn."""
    for round_ in range(args.rounds):  # the columns interleaved: each round measures each
        if args.rounds > 1:
            log(f"round {round_ + 1} of {args.rounds}")
        if "floor" in args.only:
            with busy.measure("floor"):
                measure_target(browser, floor, results, repeats, "floor", self_check=True)
            log(f"self-check: {self_check(results)}")
        if "sample" in args.only:
            with busy.measure("sample"):
                measure_target(browser, app, results, repeats, "sample")
        if "sroie" in args.only and sroie is not None:
            with busy.measure("sroie"):
                measure_uploaded(browser, app, results, repeats, args.upload_timeout, "sroie", *sroie,
                                 model=SROIE_MODEL)
        if "view" in args.only:
            with busy.measure("view"):
                measure_document_view(browser, app, results, repeats, "view")
        if "10k" in args.only and not args.skip_10k:
            with busy.measure("10k"):
                measure_at_scale(browser, app, results, repeats, args.upload_timeout, "10k")


def print_checks(check: dict, guard: dict) -> None:
    """The idle-detection self-check and the busy guard, in words."""
    verdict = "PASS" if check.get("passed") else "FAIL"
    if check.get("reason"):
        print(f"\nIdle-detection self-check: {check['reason']}.")
    else:
        print(f"\nIdle-detection self-check: {verdict}. A floor button sleeping {FLOOR_SLEEP_MS} ms "
              f"measured min {check['measured_min_ms']} ms, p50 {check['measured_p50_ms']} ms (every "
              f"sample ≥ the sleep: {check['every_sample_at_least_the_sleep']}); overhead p50 "
              f"{check['overhead_p50_ms']} ms vs the plain floor button's p50 "
              f"{check['plain_button_p50_ms']} ms (tolerance ±{SELF_CHECK_TOLERANCE_MS} ms).")
    if guard["enabled"]:
        print(f"\nOther processes were busy (> {guard['max_cores']} cores) during {guard['discarded_units']} "
              f"unit(s) of measurement: discarded and redone once quiet ({guard['kept_busy_units']} kept).")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 15 (while developing)")
    parser.add_argument("--repeats", type=int, help="timed repeats per action (default 15)")
    parser.add_argument("--app-root", type=Path, default=HERE.parent, help="checkout whose app.py to run")
    parser.add_argument("--skip-10k", action="store_true", help="skip the 10,000-receipt scale")
    parser.add_argument("--upload-timeout", type=float, default=600, help="time box of the 10k upload (s)")
    parser.add_argument("--only", nargs="+", choices=list(COLUMNS), default=list(COLUMNS),
                        help="measure only these columns (the self-check needs floor)")
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                        help="first wait up to S seconds until other processes leave the cores idle")
    parser.add_argument("--max-busy", type=float, default=0.25, metavar="CORES",
                        help="redo a unit of measurement when other processes used more than CORES "
                        "meanwhile (0: never)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every column this many times in turn, --repeats each time, so the "
                        "apps compared share the machine's load (the figures pool the rounds)")
    parser.add_argument("--sroie-dir", type=Path, default=SROIE_DIR,
                        help="SROIE's ground truth and predictions (column sroie)")
    parser.add_argument("--json", type=Path, help="write every sample here")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    sroie = sroie_files(args.sroie_dir)
    if "sroie" in args.only and sroie is None:
        log(f"sroie: no {SROIE_GT} under {args.sroie_dir}: column skipped")
    if args.wait_quiet > 0:
        harness.wait_for_quiet_machine(args.wait_quiet, log=log)
    global GUARD
    GUARD = harness.Guard(max_cores=args.max_busy, enabled=args.max_busy > 0, log=log)
    repeats = args.repeats or (3 if args.quick else 15)
    app_root = args.app_root.resolve()

    floor = Target("floor", FLOOR_SCRIPT, FLOOR_SCRIPT.parent, FLOOR_PAGES, FLOOR_HOME, FLOOR_SLIDER,
                   FLOOR_BUTTON, first_shown=lambda page: harness.keyed(page, FLOOR_FIRST_SHOWN),
                   env={"FLOOR_SLEEP_MS": str(FLOOR_SLEEP_MS)})
    app = Target("app", app_root / APP_SCRIPT, app_root, APP_PAGES, APP_HOME, APP_SLIDER, APP_BUTTON,
                 first_shown=lambda page: page.get_by_test_id(APP_FIRST_NUMBER).first,
                 slider_setup=APP_SLIDER_SETUP)

    from playwright.sync_api import sync_playwright

    results = Results()
    started, foreign, busy = time.perf_counter(), harness.ForeignLoad().start(), harness.BusyLog()
    error = None
    with sync_playwright() as playwright:
        browser = harness.launch_chromium(playwright)
        info = harness.machine(browser.version)
        try:
            measure_rounds(browser, args, floor, app, results, busy, sroie, repeats)
        except Exception as exc:  # report what was measured, then fail
            error = exc
            log(f"stopped by {type(exc).__name__}: {exc}")
        finally:
            browser.close()

    check = self_check(results)
    report = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": info,
        "app_root": str(app_root),
        "app_commit": harness.git_commit(app_root),
        "repeats": repeats,
        "quiet_ms": harness.QUIET_MS,
        "wall_seconds": round(time.perf_counter() - started),
        "other_processes_cpu": foreign.stop(),
        "other_processes_cpu_by_column": busy.loads,
        "guard": GUARD.as_json(),
        "error": repr(error) if error else None,
        "self_check": check,
        "ratios_p50": ratios(results),
        "results": results.as_json(),
    }
    print(f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB; Python "
          f"{info['python']}, Streamlit {info['streamlit']}, Chromium {info['chromium']}; "
          f"app {report['app_commit']}; {repeats} repeats per action; other processes used "
          f"{report['other_processes_cpu']['cores_on_average']} cores on average during the run ("
          + ", ".join(f"{c}: {v['cores_on_average']}" for c, v in busy.loads.items()) + ").\n")
    print(markdown(results))
    for column, bars in report["ratios_p50"].items():
        print(f"\nAgainst the floor, p50 ({COLUMNS[column]}): "
              + "; ".join(f"{what} {ratio:.2f}x" for what, ratio in bars.items()) + " (bar: 2x each).")
    print_checks(check, report["guard"])
    for column, rows in results.notes.items():
        if "exceptions" in rows:
            print(f"\nWarning ({COLUMNS[column]}): {rows['exceptions']}.")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    if error:
        raise SystemExit(f"incomplete: {error!r}")


if __name__ == "__main__":
    main()
