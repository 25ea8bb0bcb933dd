"""A full server under hostile and heavy uploads: admission, the busy answer and release.

    python bench/bench_admission.py [--budget-mb 1500] [--sessions 8] [--gt-mb 51]
                                    [--files large|red-team] [--observe 30] [--release 90]
                                    [--allocator dashboard|python] [--json OUT]

One ``streamlit run app.py`` server with ``KIEVAL_MEMORY_BUDGET_MB=--budget-mb`` and the
environment ``kieval dashboard`` gives it (``--allocator dashboard``: glibc's malloc for
everything, :data:`kieval_app.serving.tuning.ALLOCATOR_ENV`; ``python``: Python's and Arrow's own
allocators, as before); one headless Chromium (Debian's), each session in its own browser
context.

0. The server's RSS before anyone came, and with the observer's first page open.
1. Idle: one observer session switches pages for ``--observe`` seconds: idle p50. The
   server's RSS after that is the **start**: the warm server, every page's modules
   imported and the sample scored, as every later visitor finds it.
2. Load: ``--sessions`` sessions at once each upload a file. ``--files large`` (issue 22):
   a ground truth each, the even ones a different ``--gt-mb`` MB JSONL (CORD v2 receipts
   under new ids), the odd ones a 1 MB zip bomb (one member of 1000 MiB of blanks).
   ``--files red-team`` (issue 33): the inputs that cost by something else than their
   bytes, in turn (:func:`red_team_files`): N1 a zip of a TIFF of 200,000 frames, N11 a PDF
   of 50 pages of 4,500 points and a zip of 20 PNGs of 7,000 x 7,000 (page images); N2
   values of 300,000 characters, N10 "date" values of 400 KB, N8 one document of 5,000 and
   one of 25,000 menu lines, N7 a dense CSV of 1,000,000 rows (ground truths). Meanwhile
   the observer keeps switching pages. Each upload session's outcome is read from its
   alerts: loaded, busy ("the server is busy"), refused by a limit ("above the limit"),
   refused otherwise, or anything else. The CPU of the server's own process and of its
   children (the uploads' work) during the load is reported.
3. Release: every tab is closed; the server's RSS is sampled every 5 s for ``--release``
   seconds, with nobody else coming or going.

Bars (issues 22 and 33): server RSS peak under the budget + 500 MiB; every session that was not
loaded sees the busy, the limit or its refusal message; the observer's page switches under load within
2x its idle p50; RSS within 20% of its start within ``--release`` seconds of closing. The
other processes' CPU during the run is reported (a shared machine skews latencies).

The server's memory stays under ~2 GiB with the default budget; the browsers take about as
much (keep the whole run under 4 GiB on a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
import streamlit_harness as harness  # noqa: E402
from app_facts import APP_PAGES, APP_SCRIPT, APP_UPLOAD_GT, APP_UPLOAD_IMAGES  # noqa: E402
from bench_load import Monitor, log, open_session, switch_pages  # noqa: E402
from builders import large_pdf, menu_document, replicated_jsonl, tiff_frames, zip_bomb  # noqa: E402

from kieval_app.serving.tuning import ALLOCATOR_ENV  # noqa: E402

TIMEOUT_MS = 600_000  # uploads waiting for their turn on a busy machine
SAMPLE_GT = HERE.parent / "sample_data" / "cord_v2_gt.jsonl"
OUTCOMES = {"loaded": "loaded as the ground truth", "images": "page(s) of", "busy": "the server is busy",
            "limit": "above the limit", "refused": "refused: "}
UPLOADERS = {"gt": APP_UPLOAD_GT, "images": APP_UPLOAD_IMAGES}


def large_files(folder: Path, sessions: int, gt_mb: float) -> list[tuple[str, Path]]:
    """Issue 22's uploads: a different ``gt_mb`` MB ground truth and a zip bomb in turn."""
    bomb = zip_bomb(folder / "bomb.zip")
    return [("gt", replicated_jsonl(SAMPLE_GT, folder / f"gt_{i}.jsonl", gt_mb, f"s{i}_")
             if i % 2 == 0 else bomb) for i in range(sessions)]


def red_team_files(folder: Path, sessions: int) -> list[tuple[str, Path]]:
    """Issue 33's red-team inputs (generated as tests/test_page_images.py and
    tests/test_bounded_work.py do), one per session in turn: ``(uploader, file)``."""
    import io
    import zipfile

    from PIL import Image

    def zipped(path: Path, members: dict[str, bytes]) -> Path:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        return path

    def written(path: Path, data: bytes) -> Path:
        path.write_bytes(data)
        return path

    def document(path: Path, fields: dict[str, str]) -> Path:
        return written(path, (json.dumps({"doc_id": "d1", "gt_parse": fields}) + "\n").encode())

    png = io.BytesIO()
    Image.new("L", (7_000, 7_000), 255).save(png, "PNG")
    pngs = [f"validation_{i:04d}.png" for i in range(20)]
    rows = b"".join(b"d%d,e%d,%d\n" % (i // 20, i % 20, i % 999) for i in range(1_000_000))
    files = [
        ("images", zipped(folder / "n1_frames.zip", {"validation_0001.tif": tiff_frames(200_000)})),
        ("gt", document(folder / "n2_long.jsonl", {k: k * 300_000 for k in "abc"})),
        ("gt", menu_document(folder / "n8_5000.jsonl", "gt_parse", 5_000)),
        ("images", written(folder / "n11_pages.pdf", large_pdf(50))),
        ("gt", written(folder / "n7_dense.csv", b"doc_id,entity,value\n" + rows)),
        ("gt", document(folder / "n10_dates.jsonl", {"date": "2024-01-31 " * 36_000})),
        ("images", zipped(folder / "n11_pngs.zip", dict.fromkeys(pngs, png.getvalue()))),
        ("gt", menu_document(folder / "n8_25000.jsonl", "gt_parse", 25_000)),
    ]
    return [files[i % len(files)] for i in range(sessions)]


async def upload_one(browser, url: str, role: str, path: Path) -> dict:
    page, _ = await open_session(browser, url)
    start = time.perf_counter()
    await page.locator(UPLOADERS[role]).locator("input[type=file]").set_input_files(str(path))
    text = ""
    while time.perf_counter() - start < TIMEOUT_MS / 1000:
        alerts = page.get_by_test_id("stAlert")
        text = " | ".join([await a.inner_text() for a in await alerts.all()])
        if any(marker in text for marker in OUTCOMES.values()):
            break
        await asyncio.sleep(0.5)
    await harness.async_wait_idle(page, TIMEOUT_MS)
    outcome = next((k for k, marker in OUTCOMES.items() if marker in text), "other")
    shown = next((line for line in text.split(" | ") if path.name in line), text)[:300]
    return {"file": path.name, "outcome": outcome, "seconds": round(time.perf_counter() - start, 1),
            "message": shown, "page": page}


async def observe(page, stop: asyncio.Event) -> list[tuple[float, str, float]]:
    """Switch pages until ``stop`` is set (the action in flight ends first): per switch, the
    seconds from the start to its click, the page and its latency (ms)."""
    titles = list(APP_PAGES)
    samples, k, start = [], 1, time.perf_counter()
    while not stop.is_set():
        title = titles[k % len(titles)]
        clicked = round(time.perf_counter() - start, 1)
        result = await harness.async_timed_action(page, harness.nav_link(page, title).click, TIMEOUT_MS)
        samples.append((clicked, title, result["ms"]))
        k += 1
    return samples


async def uploaders_browser(playwright, nice: int, folder: Path):
    """A second Chromium for the uploading sessions, run at niceness ``nice`` under the idle
    scheduling policy (None for 0: they share the observer's browser).

    Niceness alone did not hold: Chromium run as root sets its processes' own (its browser
    and GPU processes at -8, its renderers at 0 or 5), so the eight uploaders' tabs took the
    cores as any other (1.1-3.0 cores for all Chromiums in the load's first 24 s). Every
    thread of theirs keeps ``SCHED_IDLE``, which Chromium does not change: it runs only on
    what the server, the observer and its browser leave."""
    if not nice:
        return None
    wrapper = folder / "chromium-idle"
    wrapper.write_text(f"#!{sys.executable}\nimport os, sys\n"
                       "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
                       f"os.nice({nice})\n"
                       f"os.execv({str(harness.CHROMIUM)!r}, [{str(harness.CHROMIUM)!r}, *sys.argv[1:]])\n")
    wrapper.chmod(0o755)
    return await playwright.chromium.launch(executable_path=str(wrapper), args=harness.CHROMIUM_ARGS)


async def run(args) -> dict:
    from playwright.async_api import async_playwright

    report: dict = {"date": dt.datetime.now().isoformat(timespec="seconds"), "budget_mb": args.budget_mb,
                    "app_commit": harness.git_commit(HERE.parent), "sessions": args.sessions,
                    "allocator": args.allocator}
    report["files"] = args.files
    foreign = harness.ForeignLoad().start()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = (red_team_files(folder, args.sessions) if args.files == "red-team"
                 else large_files(folder, args.sessions, args.gt_mb))
        env = {"KIEVAL_MEMORY_BUDGET_MB": str(args.budget_mb),
               **(ALLOCATOR_ENV if args.allocator == "dashboard" else {})}
        with harness.streamlit_server(HERE.parent / APP_SCRIPT, HERE.parent, env=env) as server:
            async with async_playwright() as playwright:
                browser = await harness.launch_chromium(playwright)
                uploaders = await uploaders_browser(playwright, args.uploaders_nice, folder) or browser
                try:
                    report["machine"] = harness.machine(browser.version)
                    monitor = Monitor(server)
                    await asyncio.sleep(5)
                    report["rss_unserved_mib"] = monitor.rss_mib()
                    observer, _ = await open_session(browser, server.url)
                    await asyncio.sleep(5)
                    report["rss_first_page_mib"] = monitor.rss_mib()
                    log(f"idle: observer switching pages for {args.observe:.0f} s")
                    idle = await switch_pages(observer, 0, time.perf_counter() + args.observe)
                    idle_ms = [ms for _, ms, _ in idle["samples"]]
                    await asyncio.sleep(5)
                    report["rss_start_mib"] = start = monitor.rss_mib()
                    report["pss_start_mib"] = pss_mib(server)
                    log(f"load: {args.sessions} sessions uploading at once")
                    monitor.start_peak()
                    cpu = server_cpu(server)
                    stop = asyncio.Event()
                    watching = asyncio.create_task(observe(observer, stop))
                    uploads = (upload_one(uploaders, server.url, role, f) for role, f in files)
                    done = await asyncio.gather(*uploads)
                    stop.set()
                    switches = await watching
                    loaded_ms = [ms for _, _, ms in switches]
                    peak = await monitor.stop_peak()
                    report["load_cpu_s"] = {k: round(v - cpu[k], 1) for k, v in server_cpu(server).items()}
                    log("closing every tab")
                    await asyncio.gather(*(d["page"].context.close() for d in done), observer.context.close())
                    closed_at = time.perf_counter()
                    release = []
                    while time.perf_counter() - closed_at < args.release:
                        await asyncio.sleep(5)
                        release.append((round(time.perf_counter() - closed_at), monitor.rss_mib()))
                    report["pss_end_mib"] = pss_mib(server)
                finally:
                    if uploaders is not browser:
                        await uploaders.close()
                    await browser.close()
    report["uploaders_nice"] = args.uploaders_nice
    report["other_processes"] = foreign.stop()
    within = [t for t, rss in release if rss <= start * 1.2]
    outcomes = [{k: v for k, v in d.items() if k != "page"} for d in done]
    report.update({
        "idle_ms": harness.summary(idle_ms),
        "under_load_ms": harness.summary(loaded_ms),
        "under_load_switches": switches,
        "rss_peak_mib": peak,
        "uploads": outcomes,
        "release_mib": release,
        "seconds_to_within_20pct": within[0] if within else None,
        "bars": {
            "peak_under_budget_plus_500": peak < args.budget_mb + 500,
            "refused_see_busy_or_limit": all(o["outcome"] in OUTCOMES for o in outcomes),
            "switches_within_2x_idle_p50": (harness.summary(loaded_ms)["p50"]
                                            <= 2 * harness.summary(idle_ms)["p50"]),
            "rss_within_20pct_in_time": bool(within),
        },
    })
    return report


def pss_mib(server) -> float:
    """Proportional memory of the server and its children (MiB): a page shared by several
    of them (the fork server's, its children's) counts once in all, where their RSS
    counts it in each."""
    import psutil

    total = 0
    for p in server._processes():
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_full_info().pss
    return round(total / 2**20, 1)


def server_cpu(server) -> dict[str, float]:
    """CPU seconds so far of the server's own process and of its children (the fork server,
    the children at work on uploads and the ones that ended)."""
    own = server._processes()[0].cpu_times()
    return {"server": own.user + own.system, "children": server.cpu_seconds() - own.user - own.system}


def markdown(report: dict) -> str:
    idle, load = report["idle_ms"], report["under_load_ms"]
    counts: dict[str, int] = {}
    for o in report["uploads"]:
        counts[o["outcome"]] = counts.get(o["outcome"], 0) + 1
    lines = [
        f"| {report['sessions']} sessions at once, budget {report['budget_mb']:,} MiB, "
        f"allocator {report['allocator']}, uploaders' browser nice {report.get('uploaders_nice', 0)}"
        f"{' (SCHED_IDLE)' if report.get('uploaders_nice') else ''} | |",
        "|---|---:|",
        "| server RSS before anyone came / first page / start (warm) (MiB) | "
        f"{report['rss_unserved_mib']:.0f} / {report['rss_first_page_mib']:.0f} / "
        f"{report['rss_start_mib']:.0f} |",
        f"| server RSS peak (MiB) | {report['rss_peak_mib']:.0f} |",
        f"| server PSS start / end (MiB; shared pages counted once) | {report['pss_start_mib']:.0f} / "
        f"{report['pss_end_mib']:.0f} |",
        f"| outcomes | {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))} |",
        f"| CPU during the uploads: server's own process / its children (s) | "
        f"{report['load_cpu_s']['server']} / {report['load_cpu_s']['children']} |",
        f"| observer page switch p50 idle / under load (ms) | {idle['p50']:.0f} / {load['p50']:.0f} |",
        "| RSS after closing every tab (s: MiB) | "
        f"{', '.join(f'{t}: {r:.0f}' for t, r in report['release_mib'])} |",
        f"| seconds until RSS within 20% of its start | {report['seconds_to_within_20pct']} |",
    ]
    other = report["other_processes"]
    lines.append(f"| other processes' CPU during the run | {other['cores_on_average']} cores |")
    lines += [f"| bar: {k} | {'yes' if v else '**no**'} |" for k, v in report["bars"].items()]
    lines += [f"| {o['file']} | {o['outcome']} after {o['seconds']} s: {o['message']!r} |"
              for o in report["uploads"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-mb", type=int, default=1500)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--gt-mb", type=int, default=51)
    parser.add_argument("--files", choices=("large", "red-team"), default="large",
                        help="issue 22's large ground truths and zip bombs, or issue 33's red-team inputs")
    parser.add_argument("--observe", type=float, default=30, help="seconds of page switching, idle")
    parser.add_argument("--release", type=float, default=90, help="seconds of RSS sampling after closing")
    parser.add_argument("--allocator", choices=("dashboard", "python"), default="dashboard",
                        help="the server's allocators: as `kieval dashboard` sets them, or Python's own")
    parser.add_argument("--uploaders-nice", type=int, default=0, metavar="N",
                        help="run the uploading sessions' browser at this niceness and the idle scheduling "
                        "policy (their pages take only the CPU the server and the observer leave, as on "
                        "other machines)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    print(markdown(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
