"""Issue 22's server-side findings, in a real server with a real browser (Playwright and
Debian's Chromium), as they were seen: a 1 MB zip bomb uploaded as a ground truth took
the server to 6 GiB (finding 1), a 174 KB Parquet file of 20M rows to 7 GiB (finding 2),
and a closed tab's memory stayed until another visitor left (finding 3).

The server runs with a memory budget of 1,500 MiB (``KIEVAL_MEMORY_BUDGET_MB``); its
resident memory is sampled from ``/proc`` while the browser works.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from browser_setup import CHROMIUM, need_chromium, wait_idle
from builders import menu_document, replicated_jsonl, zip_bomb

from kieval_app.serving.headless import CHROMIUM_ARGS, free_port, server_log, stop, wait_healthy

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 120_000
GT_BOX = '[class*="st-key-upload_gt_"]'
PRED_BOX = '[class*="st-key-upload_pred_"]'


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


class Server:
    def __init__(self, url: str, process: subprocess.Popen) -> None:
        self.url, self.process = url, process

    def rss(self) -> float:
        return _rss_mib(self.process.pid)

    def readers(self) -> list[psutil.Process]:
        """The processes at work on uploads: the children of the server's fork server that
        use the CPU (a spare child waits on its pipe for work)."""
        return _at_work(self.process.pid)

    @contextlib.contextmanager
    def peak(self):
        """The largest resident memory while the block runs (sampled every 0.1 s)."""
        found = {"peak": self.rss()}
        done = threading.Event()

        def sample():
            while not done.is_set():
                found["peak"] = max(found["peak"], self.rss())
                time.sleep(0.1)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield found
        finally:
            done.set()
            thread.join()
            found["peak"] = max(found["peak"], self.rss())


@pytest.fixture(scope="module")
def server():
    need_chromium()
    with _own_server() as running:
        yield running


@contextlib.contextmanager
def _own_server(**settings: str):
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "KIEVAL_MEMORY_BUDGET_MB": "1500",
           **settings}
    log = server_log()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_healthy(url, process, log=log)
        yield Server(url, process)
    finally:
        if process.poll() is None:
            stop(process)
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _idle(page) -> None:
    wait_idle(page, TIMEOUT_MS)


def _open(browser, server: Server):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server.url)
    page.get_by_role("heading", name="KIEval Workbench").wait_for()
    _idle(page)
    return context, page


def _upload_gt(page, path: Path) -> None:
    page.locator(GT_BOX).locator("input[type=file]").set_input_files(str(path))
    page.wait_for_timeout(1000)
    _idle(page)


def _alerts(page) -> str:
    return " | ".join(a.inner_text() for a in page.get_by_test_id("stAlert").all())


def _upload_measured(browser, server: Server, path: Path) -> tuple[str, float]:
    """Upload ``path`` as the ground truth in a fresh tab: the alerts it shows, and how far
    the server's resident memory rose above where it was (MiB) while it was taken in."""
    context, page = _open(browser, server)
    with server.peak() as rss:
        start = rss["peak"]
        _upload_gt(page, path)
    shown = _alerts(page)
    context.close()
    return shown, rss["peak"] - start


def test_a_zip_bomb_upload_is_refused_without_the_memory(server, browser, tmp_path):
    """Finding 1: a 1 MB zip of one 1000 MiB member; the server's RSS went 304 -> 6,237 MiB."""
    shown, growth = _upload_measured(browser, server, zip_bomb(tmp_path / "bomb.zip"))
    assert "bomb.zip: 1,000 MiB uncompressed is above the limit of 512 MiB" in shown, shown
    assert "KIEVAL_MAX_UNCOMPRESSED_MB" in shown
    assert growth < 100  # the upload's own bytes, not its inflation


def test_a_small_parquet_of_20m_rows_is_refused_from_its_footer(server, browser, tmp_path):
    """Finding 2: 174 KB, 20M dictionary-encoded rows; peak 6,977 MiB, 5,053 MiB held after."""
    path = tmp_path / "rows.parquet"
    column = pa.DictionaryArray.from_arrays(pa.array([0] * 20_000_000, pa.int32()), pa.array(["x"]))
    pq.write_table(pa.table({"doc_id": column, "entity": column, "value": column}), path)
    del column
    shown, growth = _upload_measured(browser, server, path)
    assert "rows.parquet: 20,000,000 rows in the footer is above the limit of 5,000,000 rows" in shown, shown
    assert growth < 100


def _ground_truth(path: Path, megabytes: int) -> Path:
    return replicated_jsonl(ROOT / "sample_data" / "cord_v2_gt.jsonl", path, megabytes)


def test_a_closed_tab_releases_its_memory_within_a_minute(browser, tmp_path):
    """Finding 3: 6 closed tabs of 51 MB each held 1,920 MiB (from 310) after 155 s idle,
    until another visitor left. Here nobody else comes or goes. The store keeps up to 64 MiB
    of what no session holds by design (the sample stays warm for the next visitor; part of
    the upload stayed within it, ~38 MiB of the 160 here): this server keeps none, so what
    the tab held is what must go."""
    gt = _ground_truth(tmp_path / "big_gt.jsonl", 30)
    with _own_server(KIEVAL_IDLE_CACHE_MB="0") as server:
        _closed_tab_releases(browser, server, gt)


def _closed_tab_releases(browser, server: Server, gt: Path) -> None:
    context, page = _open(browser, server)
    time.sleep(2)
    before = server.rss()  # the server with this session on the sample
    _upload_gt(page, gt)
    assert "big_gt.jsonl: loaded as the ground truth" in _alerts(page), _alerts(page)
    loaded = server.rss()
    assert loaded - before > 100, (before, loaded)  # the upload and its dataset are held
    context.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.rss() > before + 0.2 * (loaded - before):
        time.sleep(2)
    after = server.rss()
    assert after <= before + 0.2 * (loaded - before), (before, loaded, after)


def test_a_long_upload_can_be_cancelled_keeping_the_session(server, browser, tmp_path):
    """Issue 22, finding 9 (long work in the page can be cancelled): the Cancel button beside
    the progress answers at once and stops the read of a 60 MB ground truth: the child
    process reading it is gone within two seconds; the session keeps what it had, and the
    same file uploaded again then loads."""
    gt = _ground_truth(tmp_path / "long_gt.jsonl", 60)
    context, page = _open(browser, server)
    page.locator(GT_BOX).locator("input[type=file]").set_input_files(str(gt))
    cancel = page.locator('[class*="st-key-cancel_uploads"] button').first
    cancel.wait_for(state="visible")
    deadline = time.monotonic() + 60
    while not server.readers() and time.monotonic() < deadline:  # the read has started
        time.sleep(0.05)
    readers = server.readers()
    assert readers, "the read did not run in a child process"
    time.sleep(1)  # well into the read (about 5 s)
    clicked = time.monotonic()
    cancel.click()
    page.get_by_text("cancelled: long_gt.jsonl not loaded").wait_for()
    answered = time.monotonic() - clicked
    stopped = [_gone(p, clicked + 2) for p in readers]
    _idle(page)
    shown = _alerts(page)
    assert "loaded as the ground truth" not in shown, shown
    page.get_by_test_id("stTable").first.wait_for()  # the sample's figures, as before
    again = time.monotonic()
    page.locator(GT_BOX).locator("input[type=file]").set_input_files(str(gt))
    page.get_by_text("long_gt.jsonl: loaded as the ground truth").wait_for()
    rest = time.monotonic() - again
    context.close()
    assert all(stopped), [p.pid for p in readers]
    assert answered < rest, (answered, rest)  # the page answered without waiting for a read


def _at_work(pid: int, window_s: float = 0.3) -> list[psutil.Process]:
    """The children of the fork server of process ``pid`` that used the CPU within ``window_s``."""
    forkservers = [p for p in psutil.Process(pid).children() if "forkserver" in " ".join(p.cmdline())]
    children = [c for f in forkservers for c in f.children()]
    before = {}
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            before[child.pid] = sum(child.cpu_times()[:2])
    time.sleep(window_s)
    working = []
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            if sum(child.cpu_times()[:2]) > before.get(child.pid, 0):
                working.append(child)
    return working


def _switch_pages(page, until: Callable[[], bool], at_least: int = 0) -> list[float]:
    """Switch the page's pages in turn until ``until()`` (and ``at_least`` times): the
    seconds each switch took, from the click to the end of the script run."""
    titles = ["Documents", "Errors", "Overview"]
    seconds: list[float] = []
    while len(seconds) < at_least or not until():
        started = time.monotonic()
        nav = page.get_by_test_id("stSidebarNav")
        nav.get_by_role("link", name=titles[len(seconds) % 3], exact=True).click()
        page.wait_for_timeout(100)
        wait_idle(page, TIMEOUT_MS, settle_ms=0)
        seconds.append(time.monotonic() - started)
    return seconds


def test_a_document_of_thousands_of_lines_is_refused_by_name_off_the_server(server, browser, tmp_path):
    """Issue 33, N8, as it was seen in the browser: a document of 5,000 menu lines (a
    680 KB file) was scored in the server's process (RSS 295 -> 4,766 MiB) and the server
    then ignored SIGTERM for 18 s. Here 25,000 lines (3.4 MB): read in a child process and
    refused at the groups limit, naming the file, the document and the figure; the server's
    own memory stays where it was, and another session's page switches go on meanwhile."""
    gt = menu_document(tmp_path / "n8_gt.jsonl", "gt_parse", 25_000)
    observer_context, observer = _open(browser, server)
    idle = _switch_pages(observer, lambda: True, at_least=6)
    context, page = _open(browser, server)
    with server.peak() as rss:
        start = rss["peak"]
        page.locator(GT_BOX).locator("input[type=file]").set_input_files(str(gt))
        busy = _switch_pages(observer, lambda: "n8_gt.jsonl" in _alerts(page), at_least=3)
        _idle(page)
    shown = _alerts(page)
    context.close()
    observer_context.close()
    assert ("refused: n8_gt.jsonl, document 'big': 25,000 groups of type 'menu' (matching them costs their "
            "number squared) is above the limit of 1,000 groups (raise it with --max-groups-per-doc or "
            "KIEVAL_MAX_GROUPS_PER_DOC)") in shown, shown
    assert rss["peak"] - start < 25, (start, rss["peak"])  # its parse stays in the child (main: +51 MiB)
    print(f"N8: server RSS {start:.0f} -> peak {rss['peak']:.0f} MiB; page switches idle {idle}, busy {busy}")
    idle_s = statistics.median(idle)
    assert statistics.median(busy) <= max(2 * idle_s, idle_s + 1), (idle, busy)


def test_the_server_answers_sigterm_at_once_while_an_upload_is_worked_on(browser, tmp_path):
    """Issue 33: the server ignored SIGTERM for 18 s while an upload's matching ran in its
    process. With every upload's work in a child, a server reading a 60 MB ground truth
    exits within two seconds of SIGTERM and leaves no process behind."""
    gt = _ground_truth(tmp_path / "long_gt.jsonl", 60)
    with _own_server() as server:
        context, page = _open(browser, server)
        page.locator(GT_BOX).locator("input[type=file]").set_input_files(str(gt))
        deadline = time.monotonic() + 60
        readers = []
        while not readers and time.monotonic() < deadline:  # the read has started
            readers = server.readers()
        assert readers, "the read did not run in a child process"
        time.sleep(1)  # well into the read (about 5 s)
        exited, left = _terminated(server, wait_s=10)
        context.close()
    assert exited < 2, exited
    assert not left, left


def _nested_menus(path: Path, key: str, docs: int, lines: int) -> Path:
    """``docs`` documents of ``lines`` nested CORD menu lines under ``key``: ANLS* matches
    each document's lists of lines (about 8 s for one document of 900 lines)."""
    with path.open("w", encoding="utf-8") as out:
        for d in range(docs):
            menu = [{"nm": {"value": f"ITEM {(i * 7 + d) % 97}"}, "cnt": {"value": str(1 + i % 3)},
                     "price": {"value": f"{(i * 37 + d) % 100},000"}} for i in range(lines)]
            out.write(json.dumps({"doc_id": f"d{d}", key: {"menu": menu}}) + "\n")
    return path


def test_the_server_answers_sigterm_at_once_while_peer_metrics_are_computed(browser, tmp_path):
    """Issue 33: the peer metric families, computed after the KIEval scoring, ran in a
    thread of the server, which the interpreter waits for at exit: a server computing
    ANLS* on three documents of 900 nested lines (about 25 s) ignored SIGTERM until they
    were done. Here it exits within two seconds and leaves no process behind."""
    gt = _nested_menus(tmp_path / "nested_gt.jsonl", "gt_parse", 3, 900)
    pred = _nested_menus(tmp_path / "nested_pred.jsonl", "prediction", 3, 897)
    with _own_server() as server:
        context, page = _open(browser, server)
        _upload_gt(page, gt)
        page.locator(PRED_BOX).locator("input[type=file]").set_input_files(str(pred))
        page.get_by_text("Peer metrics:").first.wait_for()
        time.sleep(1)  # into ANLS*
        assert server.readers(), "the peer metrics did not run in a child process"
        exited, left = _terminated(server, wait_s=60)
        context.close()
    print(f"SIGTERM during the peer metrics: the server exited in {exited:.2f} s")
    assert exited < 2, exited
    assert not left, left


def _terminated(server, wait_s: float) -> tuple[float, list[int]]:
    """SIGTERM to the server: the seconds until it exited (up to ``wait_s``) and the pids of
    it and its children still there two seconds later."""
    top = psutil.Process(server.process.pid)
    family = [top, *top.children(recursive=True)]
    sent = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.process.wait(timeout=wait_s)
    exited = time.monotonic() - sent
    return exited, [p.pid for p in family if not _gone(p, time.monotonic() + 2)]


def _gone(process: psutil.Process, deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped: holds nothing
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False
