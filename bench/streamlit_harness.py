"""Shared machinery of the browser benchmarks (``bench_latency.py``, ``bench_load.py``).

Only Streamlit's own mechanics live here (starting a server, launching Chromium, telling
when a rerun has finished, percentiles, process CPU and memory, the machine); everything
that names a page, a heading or a widget of the app under test is in each script's
configuration block, so that a refactor of the app touches only those blocks.

Idle detection
--------------
:data:`PROBE_JS` is installed in every page before any of the app's scripts. It records,
with ``performance.now()``:

- the run messages the server sends over the WebSocket: a ``ForwardMsg`` with
  ``new_session`` starts a script run, one with ``script_finished`` ends it (only the
  top-level protobuf field numbers are read);
- every change of the attribute ``data-test-script-state`` of Streamlit's root element
  ``[data-testid="stApp"]`` (``notRunning`` once the browser has processed the end of the
  run; a fast run can go by without the attribute changing, which is why the messages
  are watched too);
- every change of an attribute ``data-drawn`` anywhere in the page: a chart that draws
  after the run has ended (a component updating its plot) says so there, and the action
  is timed until then;
- the first animation frame after each of those (the frame that shows the result);
- the time stamp of every user ``click`` and ``keydown`` (capture phase, before the
  app's own handlers).

:func:`timed_action` marks the probe, performs the action and waits until a run has
finished since the mark, no run is pending (the last run message is a finish that is not
"stopped early for a rerun", the root says ``notRunning``) and nothing happened for
``QUIET_MS``: an action whose run triggers more runs (a callback, ``st.rerun``, a URL
update) is timed until the last one ends. The latency is from the action's own event to
the first frame after the last run's finish message, the root's last change to
``notRunning`` or the last ``data-drawn`` change, whichever is latest; the quiet period is
not counted. When the action is
not a click or a key (an upload), the time just before the action is the start.

Percentiles are linear interpolation between closest ranks (numpy's default).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kieval_app.serving.headless import free_port, server_log, stop, wait_healthy

# --- Streamlit and Chromium mechanics (not the app's) ------------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
APP_ROOT_SELECTOR = '[data-testid="stApp"]'
SCRIPT_STATE_ATTRIBUTE = "data-test-script-state"
IDLE_STATE = "notRunning"
NAV_SELECTOR = '[data-testid="stSidebarNav"]'
#: How long the script state must stay idle before a run counts as finished (not timed).
QUIET_MS = 300

#: What the page-side functions need to know, passed to them as their argument.
_JS_CONFIG = {"root": APP_ROOT_SELECTOR, "attr": SCRIPT_STATE_ATTRIBUTE, "idle": IDLE_STATE,
              "quiet": QUIET_MS}

PROBE_JS = """
((cfg) => {
  if (window.__bench) return;
  const probe = {states: [], runs: [], draws: [], events: [], mark: {states: 0, runs: 0, draws: 0, t: 0}};
  window.__bench = probe;
  const afterFrame = (entry) => requestAnimationFrame(() => { entry.frame = performance.now(); });
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      if (!m.target.matches || !m.target.matches(cfg.root)) continue;
      const entry = {state: m.target.getAttribute(m.attributeName), t: performance.now(), frame: null};
      probe.states.push(entry);
      afterFrame(entry);
    }
  }).observe(document, {attributes: true, subtree: true, attributeFilter: [cfg.attr]});
  new MutationObserver((mutations) => {
    for (const m of mutations) {
      const entry = {t: performance.now(), frame: null};
      probe.draws.push(entry);
      afterFrame(entry);
    }
  }).observe(document, {attributes: true, subtree: true, attributeFilter: ['data-drawn']});
  // The top-level fields of a ForwardMsg (protobuf): new_session (4) starts a run,
  // script_finished (6, an enum: 2 = stopped early for a rerun) ends it.
  const runMessage = (bytes) => {
    let i = 0;
    const varint = () => {
      let v = 0, shift = 0, b;
      do { b = bytes[i++]; v += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80 && i < bytes.length);
      return v;
    };
    while (i < bytes.length) {
      const tag = varint(), field = Math.floor(tag / 8), wire = tag & 7;
      if (field === 4 && wire === 2) return {kind: 'start', status: null};
      if (wire === 0) { const v = varint(); if (field === 6) return {kind: 'finish', status: v}; }
      else if (wire === 2) { const n = varint(); i += n; }
      else if (wire === 1) { i += 8; } else if (wire === 5) { i += 4; } else { return null; }
    }
    return null;
  };
  const onMessage = (event) => {
    if (!(event.data instanceof ArrayBuffer)) return;
    const entry = runMessage(new Uint8Array(event.data));
    if (entry === null) return;
    entry.t = performance.now();
    entry.frame = null;
    probe.runs.push(entry);
    afterFrame(entry);
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); this.addEventListener('message', onMessage); }
  };
  for (const type of ['click', 'keydown']) {
    document.addEventListener(type, (e) => probe.events.push({type, t: e.timeStamp}), true);
  }
})(__CONFIG__);
""".replace("__CONFIG__", json.dumps(_JS_CONFIG))

_MARK_JS = """() => {
  const p = window.__bench;
  p.mark = {states: p.states.length, runs: p.runs.length, draws: p.draws.length, t: performance.now()};
  p.events = [];
}"""

# Settled: a run started and finished since the mark, the last run message is a finish
# that is not "stopped early for a rerun", the root says idle, and nothing happened for
# cfg.quiet ms.
_SETTLED_JS = """(cfg) => {
  const p = window.__bench;
  const runs = p.runs.slice(p.mark.runs), states = p.states.slice(p.mark.states);
  const draws = p.draws.slice(p.mark.draws);
  const last = runs[runs.length - 1];
  if (!last || last.kind !== 'finish' || last.status === 2 || last.frame === null) return false;
  const app = document.querySelector(cfg.root);
  if (!app || app.getAttribute(cfg.attr) !== cfg.idle) return false;
  const latest = Math.max(last.t, ...states.map((s) => s.t), ...draws.map((d) => d.t));
  return [...states, ...draws].every((s) => s.frame !== null) && performance.now() - latest >= cfg.quiet;
}"""

# End: the first frame after the last run's finish message, after the root's last change
# to idle (the state can be committed after the message) or after the last chart drawn
# since the mark, whichever is latest.
_RESULT_JS = """(cfg) => {
  const p = window.__bench;
  const runs = p.runs.slice(p.mark.runs), states = p.states.slice(p.mark.states);
  const idle = states.filter((s) => s.state === cfg.idle), draws = p.draws.slice(p.mark.draws);
  const end = Math.max(runs[runs.length - 1].frame, ...idle.map((s) => s.frame),
                       ...draws.map((d) => d.frame));
  const start = p.events.length ? p.events[0].t : p.mark.t;
  return {ms: end - start, runs: runs.filter((r) => r.kind === 'start').length};
}"""

_IDLE_NOW_JS = """(cfg) => {
  const app = document.querySelector(cfg.root);
  return app !== null && app.getAttribute(cfg.attr) === cfg.idle;
}"""


# --- servers -------------------------------------------------------------------------------


@dataclass
class Server:
    """A running ``streamlit run``: its URL, its process and when it was spawned."""

    url: str
    process: subprocess.Popen
    spawned: float  # time.perf_counter() just before the spawn
    healthy: float = 0.0  # time.perf_counter() of the first healthy answer
    _ps: object = field(default=None, repr=False)

    def _processes(self):
        import psutil

        if self._ps is None:
            self._ps = psutil.Process(self.process.pid)
        try:
            return [self._ps, *self._ps.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the server and its children so far."""
        import psutil

        total = 0.0
        for p in self._processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
        return total

    def rss_bytes(self) -> int:
        """Resident memory of the server and its children."""
        import psutil

        total = 0
        for p in self._processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                total += p.memory_info().rss
        return total


def log(message: str) -> None:
    """A progress line on stderr, with the time."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def streamlit_server(script: Path, cwd: Path, env: dict | None = None, timeout_s: float = 120):
    """Run ``streamlit run script`` headless on a free port from ``cwd`` (so that its
    ``.streamlit/config.toml`` applies); yield a :class:`Server`; stop it by its pid."""
    port = free_port()
    environment = {
        **os.environ,
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        # the checkout's own packages first, whatever is installed in the environment
        "PYTHONPATH": os.pathsep.join([str(cwd), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        **(env or {}),
    }
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
               "--server.port", str(port), "--server.address", "127.0.0.1"]
    spawned = time.perf_counter()
    log = server_log()
    process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=log, stderr=subprocess.STDOUT)
    server = Server(url, process, spawned)
    try:
        wait_healthy(url, process, timeout_s, poll=0.05, log=log)
        server.healthy = time.perf_counter()
        yield server
    finally:
        stop(process, timeout=15)
        log.close()


# --- browsers ------------------------------------------------------------------------------


def launch_chromium(playwright):
    """Debian's Chromium (Playwright cannot download its own here); sync or async API."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def new_page(browser, timeout_ms: int, viewport=(1400, 1000)):
    """A page in a new browser context (a new Streamlit session) with the probe installed."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    context.add_init_script(PROBE_JS)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    return page


def wait_idle(page, timeout_ms: int) -> None:
    """Wait until no script run is pending and none starts during ``QUIET_MS`` (for a page
    just opened; after an action use :func:`timed_action`, which waits for the run)."""
    page.wait_for_function(_IDLE_NOW_JS, arg=_JS_CONFIG, timeout=timeout_ms)
    while True:
        page.wait_for_timeout(QUIET_MS)
        if page.evaluate(_IDLE_NOW_JS, _JS_CONFIG):
            return
        page.wait_for_function(_IDLE_NOW_JS, arg=_JS_CONFIG, timeout=timeout_ms)


def timed_action(page, action, timeout_ms: int) -> dict:
    """Perform ``action()`` (one click, key or upload) and wait until the runs it caused
    have ended (see the module docstring). Returns ``{"ms": latency, "runs": number of
    script runs}``."""
    page.evaluate(_MARK_JS)
    action()
    page.wait_for_function(_SETTLED_JS, arg=_JS_CONFIG, timeout=timeout_ms, polling=50)
    return page.evaluate(_RESULT_JS, _JS_CONFIG)


async def async_new_page(browser, timeout_ms: int, viewport=(1400, 1000)):
    """:func:`new_page` for Playwright's async API."""
    context = await browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    await context.add_init_script(PROBE_JS)
    page = await context.new_page()
    page.set_default_timeout(timeout_ms)
    return page


async def async_wait_idle(page, timeout_ms: int) -> None:
    """:func:`wait_idle` for Playwright's async API."""
    await page.wait_for_function(_IDLE_NOW_JS, arg=_JS_CONFIG, timeout=timeout_ms)
    while True:
        await page.wait_for_timeout(QUIET_MS)
        if await page.evaluate(_IDLE_NOW_JS, _JS_CONFIG):
            return
        await page.wait_for_function(_IDLE_NOW_JS, arg=_JS_CONFIG, timeout=timeout_ms)


async def async_timed_action(page, action, timeout_ms: int) -> dict:
    """:func:`timed_action` for Playwright's async API; ``action`` is a coroutine function."""
    await page.evaluate(_MARK_JS)
    await action()
    await page.wait_for_function(_SETTLED_JS, arg=_JS_CONFIG, timeout=timeout_ms, polling=50)
    return await page.evaluate(_RESULT_JS, _JS_CONFIG)


def nav_link(page, title: str):
    """The sidebar navigation link of the page titled ``title``."""
    return page.locator(NAV_SELECTOR).get_by_role("link", name=title, exact=True)


def keyed(page, key: str):
    """The element of the widget (or container) created with ``key=key``."""
    return page.locator(f".st-key-{key}")


# --- statistics and the machine ---------------------------------------------------------------


def percentile(values, q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between closest ranks
    (numpy's default method); NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values) -> dict:
    """n, p50, p95, min and max of a list of numbers (rounded to 0.1)."""
    values = list(values)
    if not values:
        return {"n": 0, "p50": None, "p95": None, "min": None, "max": None}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
    }


def machine(browser_version: str | None = None) -> dict:
    """What the figures were measured on."""
    import platform

    import streamlit

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = round(int(line.split()[1]) / 1024**2, 1)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
        "streamlit": streamlit.__version__,
        "chromium": browser_version,
    }


def git_commit(root: Path) -> str | None:
    """The checkout's commit (short), with ``+dirty`` when it has uncommitted changes."""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


class ForeignLoad:
    """CPU seconds that processes other than this one and its descendants used on the
    machine between :meth:`start` and :meth:`stop` (a busy machine skews latencies).

    Call :meth:`stop` after every server and browser has exited (their CPU then counts as
    this process's reaped children)."""

    def start(self) -> ForeignLoad:
        import psutil

        self._wall = time.perf_counter()
        self._busy = self._system_busy(psutil)
        self._own = self._own_cpu(psutil)
        return self

    @staticmethod
    def _system_busy(psutil) -> float:
        t = psutil.cpu_times()
        return t.user + t.system + getattr(t, "nice", 0) + getattr(t, "irq", 0) + getattr(t, "softirq", 0)

    @staticmethod
    def _own_cpu(psutil) -> float:
        me = psutil.Process()
        t = me.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                c = child.cpu_times()  # with its reaped children (closed renderers)
                total += c.user + c.system + c.children_user + c.children_system
        return total

    def stop(self) -> dict:
        import psutil

        wall = time.perf_counter() - self._wall
        foreign = (self._system_busy(psutil) - self._busy) - (self._own_cpu(psutil) - self._own)
        foreign = max(foreign, 0.0)
        return {"cpu_seconds": round(foreign, 1), "cores_on_average": round(foreign / wall, 2) if wall else 0}


def wait_for_quiet_machine(max_wait_s: float, threshold_cores: float = 0.2, window_s: float = 10,
                           log=print) -> bool:
    """Wait (at most ``max_wait_s``) until other processes use less than ``threshold_cores``
    over ``window_s``; True when the machine is quiet."""
    deadline = time.perf_counter() + max_wait_s
    while True:
        probe = ForeignLoad().start()
        time.sleep(window_s)
        load = probe.stop()["cores_on_average"]
        if load < threshold_cores:
            return True
        if time.perf_counter() >= deadline:
            log(f"the machine is still busy: other processes use {load} cores")
            return False
        log(f"other processes use {load} cores: waiting for a quiet machine")


class BusyLog:
    """:class:`ForeignLoad` per named phase (approximate while servers and browsers of the
    phase run: their CPU is counted as long as they are alive)."""

    def __init__(self) -> None:
        self.loads: dict[str, dict] = {}

    @contextlib.contextmanager
    def measure(self, name: str):
        probe = ForeignLoad().start()
        try:
            yield
        finally:
            self.loads[name] = probe.stop()


class Guard:
    """Runs units of measurement and redoes one when other processes were busy meanwhile.

    The machine may be shared (other benchmarks, test suites): a unit during which other
    processes used more than ``max_cores`` on average is discarded, and redone once the
    machine has been quiet for 10 s (waiting at most ``max_wait_s``; after that the unit is
    kept and counted as ``kept_busy``)."""

    def __init__(self, max_cores: float = 0.25, max_wait_s: float = 1800, enabled: bool = True,
                 log=print) -> None:
        self.max_cores, self.max_wait_s, self.enabled, self.log = max_cores, max_wait_s, enabled, log
        self.discarded = 0
        self.kept_busy = 0

    def run(self, unit, label: str = "unit"):
        while True:
            probe = ForeignLoad().start()
            value = unit()
            load = probe.stop()["cores_on_average"]
            if not self.enabled or load <= self.max_cores:
                return value
            self.discarded += 1
            self.log(f"{label}: other processes used {load} cores meanwhile; discarded, redone when quiet")
            if not wait_for_quiet_machine(self.max_wait_s, self.max_cores, log=self.log):
                self.kept_busy += 1
                return value

    def as_json(self) -> dict:
        return {"enabled": self.enabled, "max_cores": self.max_cores, "discarded_units": self.discarded,
                "kept_busy_units": self.kept_busy}
