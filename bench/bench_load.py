"""Many users on one server: latency, server CPU and memory with N concurrent sessions.

    python bench/bench_load.py [--sessions 1 4 8] [--duration 120] [--settle 60]
                               [--app-root DIR] [--skip-upload] [--json OUT]

One ``streamlit run app.py`` server (of ``--app-root``, default: the checkout this script
is in) serves the whole run. One headless Chromium (Debian's) on this machine opens every
session, each in its own browser context (a separate Streamlit session); the browsers
share the machine's cores with the server, as they would on a laptop demo.

Page switching, for each N of ``--sessions``: N sessions open the app on its sample data,
then each clicks through the sidebar navigation links in a loop (session i starts at
page i, so different pages run at once) for ``--duration`` seconds. Reported per N:

- p50 / p95 of the action latency (click to the first frame after the last script run
  it caused: the idle detection of ``streamlit_harness.py``), over every action of every
  session;
- throughput: actions finished per second over the window (the actions in flight at the
  deadline are completed and counted);
- server CPU seconds per action: user + system CPU of the server process and its
  children over the window (``psutil``), divided by the actions; the same for the
  browser processes, to show what the load generator took from the two cores;
- server RSS (process and children): before the sessions open, the peak while they run
  (sampled every 0.5 s), and ``--settle`` seconds after they are closed.

Upload (unless ``--skip-upload`` or the data is absent): 8 sessions at once each upload
the SROIE ground truth and 1 to 7 prediction files from ``/work/shared/data/sroie`` (read
in place, never copied) through the Overview page's file uploaders, then wait for the
first number. A session whose sidebar does not end up naming its own ground truth and its
own number of prediction files, or whose model picker shows a model it did not upload,
or that shows no number within ``--upload-timeout``, counts as a lost upload. RSS before,
peak and after as above.

Streamlit keeps a closed session's state for two minutes (its disconnected-session TTL)
and drops it only when the session store is next written; at the end, after
``--ttl-wait`` seconds, one session is opened and closed to trigger that, and the RSS is
sampled once more.

Prints markdown tables; ``--json`` writes them with every sample.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import re
import sys
import time
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
APP_MODEL_PICKER = "model"  # widget key of the sidebar's model selectbox
# Test-only data, read in place (never copy it into the repository).
SROIE_DIR = Path("/work/shared/data/sroie")
SROIE_GT = "sroie_test_gt.jsonl"
SROIE_PREDICTIONS = "predictions/*.jsonl"
UPLOAD_SESSIONS = 8
# ==========================================================================================

TIMEOUT_MS = 180_000
RSS_SAMPLE_S = 0.5
MIB = 1024 * 1024


class Monitor:
    """CPU of the server and of this script's other descendants (the browsers), and the
    server's RSS sampled in the background."""

    def __init__(self, server) -> None:
        import psutil

        self.server = server
        self.me = psutil.Process()
        self.peak = 0
        self._task: asyncio.Task | None = None

    def browser_cpu_seconds(self) -> float:
        import psutil

        server_pids = {p.pid for p in self.server._processes()}
        total = 0.0
        for p in self.me.children(recursive=True):
            if p.pid in server_pids:
                continue
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def rss_mib(self) -> float:
        return round(self.server.rss_bytes() / MIB, 1)

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, self.server.rss_bytes())
            await asyncio.sleep(RSS_SAMPLE_S)

    def start_peak(self) -> None:
        self.peak = self.server.rss_bytes()
        self._task = asyncio.create_task(self._sample())

    async def stop_peak(self) -> float:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.peak = max(self.peak, self.server.rss_bytes())
        return round(self.peak / MIB, 1)


# --- one session -----------------------------------------------------------------------------


async def open_session(browser, url: str):
    """A new session on the sample data; returns the page and the seconds until the first
    number is visible (then waits until idle)."""
    page = await harness.async_new_page(browser, TIMEOUT_MS)
    start = time.perf_counter()
    await page.goto(url)
    await page.get_by_test_id(APP_FIRST_NUMBER).first.wait_for(state="visible")
    seconds = time.perf_counter() - start
    await harness.async_wait_idle(page, TIMEOUT_MS)
    return page, seconds


async def heading(page) -> str:
    return (await page.get_by_role("heading", level=1).first.inner_text()).strip()


async def switch_pages(page, index: int, deadline: float) -> dict:
    """Cycle through the pages, from the one after page ``index``, until ``deadline``;
    latencies per destination page. Every session starts on the first page."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    titles = list(APP_PAGES)
    samples: list[tuple[str, float, int]] = []
    timeouts, wrong_page = 0, 0
    current, k = titles[0], index
    while time.perf_counter() < deadline:
        k += 1
        title = titles[k % len(titles)]
        if title == current:  # a click on the current page's link starts no run
            continue
        current = title
        link = harness.nav_link(page, title)
        try:
            result = await harness.async_timed_action(page, link.click, TIMEOUT_MS)
        except PlaywrightTimeout:
            timeouts += 1
            await harness.async_wait_idle(page, TIMEOUT_MS)
            continue
        samples.append((title, result["ms"], result["runs"]))
        if not (await heading(page)).startswith(APP_PAGES[title]):
            wrong_page += 1
    return {"samples": samples, "timeouts": timeouts, "wrong_page": wrong_page}


async def close_all(pages) -> None:
    await asyncio.gather(*(p.context.close() for p in pages))


async def settle(monitor: Monitor, seconds: float) -> float:
    log(f"waiting {seconds:.0f} s after closing the sessions")
    await asyncio.sleep(seconds)
    return monitor.rss_mib()


# --- scenarios -------------------------------------------------------------------------------


async def page_switch_scenario(browser, server, monitor: Monitor, n: int, duration: float,
                               settle_s: float) -> dict:
    rss_before = monitor.rss_mib()
    monitor.start_peak()
    opened = await asyncio.gather(*(open_session(browser, server.url) for _ in range(n)))
    pages = [page for page, _ in opened]
    log(f"{n} session(s) open; switching pages for {duration:.0f} s")
    cpu, browser_cpu = server.cpu_seconds(), monitor.browser_cpu_seconds()
    start = time.perf_counter()
    loops = await asyncio.gather(*(switch_pages(page, i, start + duration) for i, page in enumerate(pages)))
    elapsed = time.perf_counter() - start
    cpu, browser_cpu = server.cpu_seconds() - cpu, monitor.browser_cpu_seconds() - browser_cpu
    peak = await monitor.stop_peak()
    await close_all(pages)
    rss_after = await settle(monitor, settle_s)
    latencies = [ms for loop in loops for _, ms, _ in loop["samples"]]
    runs = [r for loop in loops for _, _, r in loop["samples"]]
    per_page: dict[str, list[float]] = {}
    for loop in loops:
        for title, ms, _ in loop["samples"]:
            per_page.setdefault(title, []).append(ms)
    actions = len(latencies)
    return {
        "sessions": n,
        "seconds": round(elapsed, 1),
        "actions": actions,
        "latency_ms": harness.summary(latencies),
        "per_page_ms": {t: harness.summary(v) for t, v in per_page.items()},
        "runs_per_action": round(sum(runs) / len(runs), 2) if runs else None,
        "throughput_per_s": round(actions / elapsed, 2),
        "server_cpu_s": round(cpu, 1),
        "server_cpu_s_per_action": round(cpu / actions, 3) if actions else None,
        "server_cpu_share": round(cpu / elapsed, 2),
        "browser_cpu_s_per_action": round(browser_cpu / actions, 3) if actions else None,
        "session_open_s": harness.summary([s for _, s in opened]),
        "timeouts": sum(loop["timeouts"] for loop in loops),
        "wrong_page": sum(loop["wrong_page"] for loop in loops),
        "rss_mib": {"before": rss_before, "peak": peak, f"after_{settle_s:.0f}s": rss_after},
        "samples_ms": [round(v, 1) for v in latencies],
    }


def upload_plan(gt: Path, predictions: list[Path], sessions: int) -> list[list[Path]]:
    """Session i uploads i % 7 + 1 prediction files, starting at a different file for
    the sessions that upload as many files."""
    count = len(predictions)
    plan = []
    for i in range(sessions):
        k = i % count + 1
        first = (i + i // count) % count
        plan.append([predictions[(first + j) % count] for j in range(k)])
    return plan


async def upload_one(browser, url: str, gt: Path, files: list[Path], others: set[str],
                     timeout_s: float) -> dict:
    """One session: open, upload the ground truth, then the predictions; what it shows.
    Returns the outcome and the page (still open)."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    page, _ = await open_session(browser, url)
    outcome: dict = {"files": [f.name for f in files], "seconds_to_first_number": None, "error": None}
    start = time.perf_counter()
    try:
        await page.locator(APP_UPLOAD_GT).locator("input[type=file]").set_input_files(str(gt))
        await page.get_by_text(APP_GT_LOADED).wait_for(timeout=timeout_s * 1000)
        await harness.async_wait_idle(page, TIMEOUT_MS)
        await page.locator(APP_UPLOAD_PREDICTIONS).locator("input[type=file]").set_input_files(
            [str(f) for f in files])
        await page.get_by_test_id(APP_FIRST_NUMBER).first.wait_for(state="visible", timeout=timeout_s * 1000)
        outcome["seconds_to_first_number"] = round(time.perf_counter() - start, 1)
        await harness.async_wait_idle(page, TIMEOUT_MS)
    except PlaywrightTimeout as exc:
        outcome["error"] = f"timed out after {time.perf_counter() - start:.0f} s: {str(exc).splitlines()[0]}"
    caption = page.get_by_text(re.compile(APP_DATA_CAPTION)).first
    text = await caption.inner_text() if await caption.count() else ""
    picker = harness.keyed(page, APP_MODEL_PICKER).get_by_role("combobox")
    model = await picker.input_value() if await picker.count() else ""
    match = re.search(APP_DATA_CAPTION, text)
    own = {f.stem for f in files}
    outcome.update(caption=text, model=model)
    outcome["exceptions"] = await page.locator('[data-testid="stException"]').count()
    outcome["lost"] = not (
        outcome["error"] is None
        and match is not None and match[1] == gt.name and int(match[2]) == len(files)
        and model in own and model not in others - own
    )
    return {"outcome": outcome, "page": page}


async def upload_scenario(browser, server, monitor: Monitor, timeout_s: float, settle_s: float) -> dict:
    gt = SROIE_DIR / SROIE_GT
    predictions = sorted(SROIE_DIR.glob(SROIE_PREDICTIONS))
    plan = upload_plan(gt, predictions, UPLOAD_SESSIONS)
    stems = {p.stem for p in predictions}
    rss_before = monitor.rss_mib()
    monitor.start_peak()
    cpu = server.cpu_seconds()
    start = time.perf_counter()
    done = await asyncio.gather(*(upload_one(browser, server.url, gt, files, stems, timeout_s)
                                  for files in plan))
    elapsed = time.perf_counter() - start
    cpu = server.cpu_seconds() - cpu
    peak = await monitor.stop_peak()
    await close_all([d["page"] for d in done])
    rss_after = await settle(monitor, settle_s)
    outcomes = [d["outcome"] for d in done]
    times = [o["seconds_to_first_number"] for o in outcomes if o["seconds_to_first_number"] is not None]
    return {
        "sessions": len(plan),
        "seconds": round(elapsed, 1),
        "lost_uploads": sum(o["lost"] for o in outcomes),
        "seconds_to_first_number": harness.summary(times),
        "server_cpu_s": round(cpu, 1),
        "rss_mib": {"before": rss_before, "peak": peak, f"after_{settle_s:.0f}s": rss_after},
        "per_session": outcomes,
    }


async def after_ttl(browser, server, monitor: Monitor, wait_s: float) -> float:
    log(f"waiting {wait_s:.0f} s for the disconnected-session TTL")
    await asyncio.sleep(wait_s)
    page, _ = await open_session(browser, server.url)
    await page.context.close()
    await asyncio.sleep(5)
    return monitor.rss_mib()


# --- report ----------------------------------------------------------------------------------


def markdown(report: dict) -> str:
    settle = f"after_{report['settle_s']:.0f}s"
    lines = [
        "| sessions | actions | p50 / p95 ms | actions/s | server CPU s/action | browser CPU s/action "
        f"| RSS MiB before / peak / {report['settle_s']:.0f} s after | timeouts | other processes (cores) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["page_switching"]:
        lat, rss = r["latency_ms"], r["rss_mib"]
        lines.append(
            f"| {r['sessions']} | {r['actions']} | {lat['p50']:.0f} / {lat['p95']:.0f} | "
            f"{r['throughput_per_s']:.2f} | {r['server_cpu_s_per_action']:.3f} | "
            f"{r['browser_cpu_s_per_action']:.3f} | {rss['before']:.0f} / {rss['peak']:.0f} / "
            f"{rss[settle]:.0f} | {r['timeouts']} | {r['other_processes_cpu']['cores_on_average']} |"
        )
    upload = report.get("upload")
    if isinstance(upload, dict):
        t, rss = upload["seconds_to_first_number"], upload["rss_mib"]
        lines += [
            "",
            f"| upload scenario | {upload['sessions']} sessions at once |",
            "|---|---:|",
            f"| lost uploads | **{upload['lost_uploads']}** of {upload['sessions']} |",
            f"| seconds from the ground-truth upload to the first number, p50 / max "
            f"| {t['p50']} / {t['max']} |",
            f"| wall seconds for all sessions | {upload['seconds']} |",
            f"| server CPU seconds | {upload['server_cpu_s']} |",
            f"| other processes meanwhile (cores) | {upload['other_processes_cpu']['cores_on_average']} |",
            f"| RSS MiB before / peak / {report['settle_s']:.0f} s after | {rss['before']:.0f} / "
            f"{rss['peak']:.0f} / {rss[settle]:.0f} |",
        ]
        for i, o in enumerate(upload["per_session"]):
            if o["lost"]:
                lines.append(f"| lost: session {i} ({len(o['files'])} files) | shows "
                             f"{o['caption'] or 'no caption'!r}, model {o['model']!r} |")
    elif upload:
        lines += ["", f"Upload scenario: {upload}"]
    if report.get("rss_after_ttl_mib") is not None:
        lines += ["", f"Server RSS at the end, after the disconnected-session TTL: "
                      f"{report['rss_after_ttl_mib']:.0f} MiB (at start: {report['rss_start_mib']:.0f} MiB)."]
    return "\n".join(lines)


async def guarded(args, label: str, scenario) -> dict:
    """Run a scenario; redo it (at most twice) when other processes used more than
    ``--max-busy`` cores meanwhile. The result says how busy the machine was."""
    for attempt in range(3):
        probe = harness.ForeignLoad().start()
        result = await scenario()
        load = probe.stop()
        result["other_processes_cpu"] = load
        result["attempts"] = attempt + 1  # a redone scenario starts with the earlier one's memory
        if args.max_busy <= 0 or load["cores_on_average"] <= args.max_busy or attempt == 2:
            return result
        log(f"{label}: other processes used {load['cores_on_average']} cores meanwhile: redone when quiet")
        await asyncio.to_thread(harness.wait_for_quiet_machine, 1800, args.max_busy, log=log)
    return result


async def run(args) -> dict:
    from playwright.async_api import async_playwright

    app_root = args.app_root.resolve()
    report: dict = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "app_root": str(app_root),
        "app_commit": harness.git_commit(app_root),
        "duration_s": args.duration,
        "settle_s": args.settle,
    }
    with harness.streamlit_server(app_root / APP_SCRIPT, app_root) as server:
        async with async_playwright() as playwright:
            browser = await harness.launch_chromium(playwright)
            try:
                report["machine"] = harness.machine(browser.version)
                monitor = Monitor(server)
                report["rss_start_mib"] = monitor.rss_mib()
                # warm the server's caches once (the sample's evaluation), not measured
                page, _ = await open_session(browser, server.url)
                await page.context.close()
                report["page_switching"] = []
                for n in args.sessions:
                    log(f"page switching with {n} session(s)")
                    result = await guarded(args, f"{n} session(s)", lambda n=n: page_switch_scenario(
                        browser, server, monitor, n, args.duration, args.settle))
                    report["page_switching"].append(result)
                    log(f"{n} session(s): {result['latency_ms']}, {result['throughput_per_s']} actions/s")
                if args.skip_upload:
                    report["upload"] = "skipped (--skip-upload)"
                elif not (SROIE_DIR / SROIE_GT).exists():
                    report["upload"] = f"skipped: {SROIE_DIR} is absent"
                    log(report["upload"])
                else:
                    log(f"upload scenario: {UPLOAD_SESSIONS} sessions")
                    report["upload"] = await guarded(args, "upload", lambda: upload_scenario(
                        browser, server, monitor, args.upload_timeout, args.settle))
                    log(f"lost uploads: {report['upload']['lost_uploads']}")
                if args.ttl_wait > 0:
                    report["rss_after_ttl_mib"] = await after_ttl(browser, server, monitor, args.ttl_wait)
            finally:
                await browser.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--duration", type=float, default=120, help="seconds of page switching per N")
    parser.add_argument("--settle", type=float, default=60, help="seconds after closing before the RSS")
    parser.add_argument("--ttl-wait", type=float, default=130,
                        help="seconds before the last RSS sample (0: skip)")
    parser.add_argument("--upload-timeout", type=float, default=600, help="seconds a session may take")
    parser.add_argument("--app-root", type=Path, default=HERE.parent, help="checkout whose app.py to run")
    parser.add_argument("--skip-upload", action="store_true")
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                        help="first wait up to S seconds until other processes leave the cores idle")
    parser.add_argument("--max-busy", type=float, default=0.25, metavar="CORES",
                        help="redo a scenario when other processes used more than CORES meanwhile "
                        "(at most twice; 0: never)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    if args.wait_quiet > 0:
        harness.wait_for_quiet_machine(args.wait_quiet, log=log)
    started, foreign = time.perf_counter(), harness.ForeignLoad().start()
    report = asyncio.run(run(args))
    report["wall_seconds"] = round(time.perf_counter() - started)
    report["other_processes_cpu"] = foreign.stop()
    info = report["machine"]
    print(f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB; Python "
          f"{info['python']}, Streamlit {info['streamlit']}, Chromium {info['chromium']}; "
          f"app {report['app_commit']}; {args.duration:.0f} s of page switching per N; other processes "
          f"used {report['other_processes_cpu']['cores_on_average']} cores on average during the run.\n")
    print(markdown(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
