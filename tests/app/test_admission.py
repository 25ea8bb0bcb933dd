"""Admission and release in the server's store (SPEC 8b, issue 22 finding 3): every load
and scoring reserves its estimated bytes against the process budget, a full server
answers "busy" with its figures and starts nothing, a session is held to its own limit,
and a closed tab's session is closed by a timer, not by the next visitor."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from test_pages import errors, started, unescape, upload, workspace

from kieval_app import compute
from kieval_app.serving.reaper import Reaper
from kieval_app.serving.store import Busy, Store
from kieval_app.sources import AppOptions, Source, Sources
from kieval_core.exceptions import KievalOptionError
from kieval_core.limits import LimitExceeded, Limits

MIB = 2**20


def test_work_that_does_not_fit_is_not_started_and_says_why():
    store = Store(idle_bytes=10**9)
    store.budget = store.in_use() + 10 * MIB
    store.hold("a", ())
    started = []
    with pytest.raises(Busy) as info:
        store.get("big", lambda: started.append(1), cost=20 * MIB)
    assert not started and store.peek("big") is None
    message = str(info.value)
    assert message.startswith("the server is busy (1 session, ") and message.endswith(
        "MB in use); try again later or run `kieval evaluate` locally")
    assert f"of {store.budget / MIB:,.0f} MB" in message
    assert store.get("small", lambda: "done", cost=MIB) == "done"  # what fits runs
    assert store.stats()["reserved"] == 0  # the reservation ends with the work, failed or not
    with pytest.raises(ZeroDivisionError):
        store.get("fails", lambda: 1 / 0, cost=MIB)
    assert store.stats()["reserved"] == 0
    assert store.get("fails", lambda: "again", cost=MIB) == "again"  # and can be asked again


def test_idle_entries_make_room_before_the_server_says_busy():
    store = Store(idle_bytes=10**9)
    store.put("idle", b"x" * (8 * MIB))  # nobody holds it: kept warm while there is room
    store.budget = store.in_use() + 4 * MIB
    assert store.get("new", lambda: "read", cost=6 * MIB) == "read"
    assert store.peek("idle") is None


def test_reservations_count_while_work_runs():
    store = Store()
    store.budget = store.in_use() + 10 * MIB

    def nested():
        with pytest.raises(Busy):  # a second job while the first holds 8 of the 10 MiB
            store.get("second", lambda: None, cost=4 * MIB)
        return "first"

    assert store.get("first", nested, cost=8 * MIB) == "first"


def test_a_session_is_held_to_its_own_limit():
    store = Store()
    options = AppOptions()
    options = replace(options, limits=replace(options.limits, session_mb=1.0))
    gt = Source.of("gt.jsonl", b'{"doc_id": "a", "gt_parse": {"x": "1"}}\n' * 30_000)
    with pytest.raises(LimitExceeded) as info:
        compute.admit_upload(store, "s", Sources(None), gt, options)
    assert str(info.value).startswith("gt.jsonl: ")
    assert str(info.value).endswith("MiB held by this session with it is above the limit of 1.00 MiB "
                                    "(raise it with --session-mb or KIEVAL_SESSION_MB)")
    compute.admit_upload(store, "s", Sources(None), Source.of("small.jsonl", b"{}"), options)


class FakeRuntime:
    def __init__(self) -> None:
        self.active: set[str] = set()
        self.closed: list[str] = []

    def is_active_session(self, session: str) -> bool:
        return session in self.active

    def close_session(self, session: str) -> None:
        self.closed.append(session)


def test_a_closed_tab_is_released_by_the_timer_after_its_grace():
    store, runtime, now = Store(idle_bytes=0), FakeRuntime(), [0.0]
    reaper = Reaper(store, runtime, lambda call: call(), grace=30, clock=lambda: now[0])
    runtime.active = {"tab1", "tab2"}
    forgotten = []
    reaper.register("tab1", "s1", lambda: forgotten.append("tab1"))
    reaper.register("tab2", "s2")
    store.hold("s1", ["result"])
    store.put("result", b"x" * 1000)
    assert reaper.sweep() == []
    runtime.active = {"tab2"}  # tab 1 closed; nobody else comes or goes
    assert reaper.sweep() == [] and store.peek("result") is not None  # within its grace
    now[0] = 20.0
    runtime.active = {"tab1", "tab2"}  # back after a network blip: kept
    assert reaper.sweep() == []
    runtime.active = {"tab2"}
    now[0] = 25.0
    assert reaper.sweep() == []
    now[0] = 55.0
    assert reaper.sweep() == ["tab1"] and runtime.closed == ["tab1"] and forgotten == ["tab1"]
    assert store.peek("result") is None  # released, not held until the next visitor
    assert store.stats()["sessions"] == 0
    now[0] = 200.0
    assert reaper.sweep() == []  # closed once


def _ground_truth(n: int) -> bytes:
    return "".join(f'{{"doc_id": "d{i}", "gt_parse": {{"x": "1"}}}}\n' for i in range(n)).encode()


def test_a_busy_server_refuses_an_upload_and_keeps_the_session(monkeypatch):
    at = started()  # the sample is scored; then the server fills up
    monkeypatch.setattr(Store, "in_use", lambda self: self.budget)
    upload(at, "gt", ("gt.jsonl", _ground_truth(5000)))
    (message,) = errors(at)
    assert "gt.jsonl: not read, the server is busy (" in message
    assert "run `kieval evaluate` locally" in message
    assert workspace(at).sources.sample  # nothing else lost


def test_an_upload_above_the_session_limit_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv("KIEVAL_SESSION_MB", "0.5")
    at = started()
    upload(at, "gt", ("gt.jsonl", _ground_truth(5000)))
    (message,) = errors(at)
    assert "gt.jsonl:" in message and "above the limit of 0.50 MiB" in message
    assert "KIEVAL_SESSION_MB" in message
    assert workspace(at).sources.sample


# --- heavy work takes turns (at most ``heavy_slots`` at once) ---------------------------------


def _run_threads(targets, timeout: float = 20.0) -> None:
    """Run the callables in threads; fail (instead of hanging) when one does not end."""
    errors_seen: list[BaseException] = []

    def guarded(target):
        try:
            target()
        except BaseException as exc:  # re-raised in the test's thread
            errors_seen.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
        assert not thread.is_alive(), "a thread never ended: a deadlock"
    if errors_seen:
        raise errors_seen[0]


def test_no_more_heavy_work_at_once_than_the_limit():
    store = Store(heavy_slots=2, heavy_bytes=MIB)
    changed, running, most = threading.Condition(), [0], [0]

    def work(together: int):
        """Runs until ``together`` pieces run at once (or 2 s): reaches it whenever it may."""
        with changed:
            running[0] += 1
            most[0] = max(most[0], running[0])
            changed.notify_all()
            changed.wait_for(lambda: running[0] >= together, timeout=2)
        time.sleep(0.01)
        with changed:
            running[0] -= 1
        return "done"

    results = []
    _run_threads([lambda i=i: results.append(store.get(f"load{i}", lambda: work(3), cost=2 * MIB))
                  for i in range(6)])
    assert results == ["done"] * 6 and most[0] == 2  # never a third heavy one
    most[0] = 0
    _run_threads([lambda i=i: store.get(f"light{i}", lambda: work(3), cost=MIB // 2) for i in range(6)])
    assert most[0] >= 3  # light work does not take turns
    assert store.stats()["heavy_running"] == 0 and store.stats()["heavy_waiting"] == 0


def test_a_scoring_runs_its_nested_reads_in_its_own_turn():
    """A scoring (heavy) reads its files through the store (heavy too); with one turn and
    several sessions scoring the same and different files at once, nothing deadlocks."""
    store = Store(heavy_slots=1, heavy_bytes=MIB)

    def read(name):
        time.sleep(0.01)
        return name

    def scoring(gt, pred):
        return store.get(("read", gt), lambda: read(gt), cost=2 * MIB) + store.get(
            ("read", pred), lambda: read(pred), cost=2 * MIB)

    pairs = [("gt", f"p{i % 3}") for i in range(9)] + [("gt2", "p0")] * 3
    results = []
    _run_threads([lambda g=g, p=p: results.append(store.get(("score", g, p), lambda g=g, p=p: scoring(g, p),
                                                             cost=4 * MIB)) for g, p in pairs])
    assert sorted(results) == sorted(g + p for g, p in pairs)
    # a light scoring whose read is heavy: the read takes no turn of its own either
    assert store.get("light", lambda: store.get(("read", "x"), lambda: "x", cost=2 * MIB), cost=1) == "x"


def test_a_waiting_session_is_told_how_many_are_ahead_and_then_proceeds():
    store = Store(heavy_slots=1, heavy_bytes=MIB)
    first_runs, first_may_end = threading.Event(), threading.Event()
    told: list[int] = []

    def first():
        first_runs.set()
        first_may_end.wait(10)
        return "first"

    def second():
        first_runs.wait(10)
        assert store.get("second", lambda: "second", cost=2 * MIB, waiting=told.append) == "second"

    def release_when_told():
        while not told:
            time.sleep(0.01)
        first_may_end.set()

    _run_threads([lambda: store.get("first", first, cost=2 * MIB), second, release_when_told])
    assert told and set(told) == {1}  # "waiting for 1 other upload to finish", then it ran
    assert compute.waiting_text(told[0]) == "waiting for 1 other upload to finish"
    assert store.peek("second") == "second"


def test_work_beyond_the_budget_is_refused_at_once_not_queued():
    store = Store(heavy_slots=1, heavy_bytes=MIB)
    store.budget = store.in_use() + 10 * MIB
    first_runs, first_may_end = threading.Event(), threading.Event()
    told, refused = [], []

    def first():
        first_runs.set()
        first_may_end.wait(10)

    def too_big():
        first_runs.wait(10)
        try:
            store.get("big", lambda: "never", cost=50 * MIB, waiting=told.append)
        except Busy as exc:
            refused.append(str(exc))
        first_may_end.set()

    _run_threads([lambda: store.get("first", first, cost=2 * MIB), too_big])
    assert not told and refused and refused[0].startswith("the server is busy (")
    assert store.peek("big") is None and store.stats()["reserved"] == 0


def test_a_waiting_caller_that_stops_leaves_the_queue():
    """A session interrupted while it waits (Streamlit stops its run from the progress
    update) gives up its place: the next one runs."""
    store = Store(heavy_slots=1, heavy_bytes=MIB)
    first_runs, first_may_end = threading.Event(), threading.Event()
    order = []

    class Stopped(Exception):
        pass

    def stop(_ahead):
        raise Stopped

    def first():
        first_runs.set()
        first_may_end.wait(10)
        order.append("first")

    def stopped():
        first_runs.wait(10)
        with pytest.raises(Stopped):
            store.get("stopped", lambda: order.append("stopped"), cost=2 * MIB, waiting=stop)
        assert store.stats()["heavy_waiting"] == 0
        first_may_end.set()

    _run_threads([lambda: store.get("first", first, cost=2 * MIB), stopped])
    assert store.get("third", lambda: order.append("third"), cost=2 * MIB) is None
    assert order == ["first", "third"] and store.stats()["heavy_running"] == 0


def test_the_heavy_loads_limit_is_read_like_the_others():
    assert Limits.from_env("app", {}).heavy_loads == 1
    assert Limits.from_env("app", {"KIEVAL_MAX_HEAVY_LOADS": "3"}).heavy_loads == 3
    assert Limits.from_env("app", {"KIEVAL_MAX_HEAVY_LOADS": "3"}, heavy_loads=2).heavy_loads == 2
    assert Limits.from_env("app", {}).environ()["KIEVAL_MAX_HEAVY_LOADS"] == "1"
    with pytest.raises(KievalOptionError):
        Limits.from_env("app", {"KIEVAL_MAX_HEAVY_LOADS": "0"})


def test_an_upload_waits_for_its_turn_on_the_page_then_loads(monkeypatch):
    """In the app: with the one heavy turn taken by another session's read, an upload's
    progress says "waiting for 1 other upload to finish", then the file loads."""
    from kieval_app import session

    at = started()
    shared = session.store()
    monkeypatch.setattr(shared, "heavy_slots", 1)
    monkeypatch.setattr(shared, "heavy_bytes", 1)  # every read is heavy here
    shown: list[str] = []
    watched = compute.while_waiting

    def recording(progress, share, text):
        def show(ahead):
            if ahead:  # 0: its read runs (in a child process: every read is heavy here)
                shown.append(compute.waiting_text(ahead))
            watched(progress, share, text)(ahead)
        return show

    monkeypatch.setattr(compute, "while_waiting", recording)
    turn_taken, other_may_end = threading.Event(), threading.Event()

    def other_session():
        with shared.reserve(MIB):
            turn_taken.set()
            while not shown:
                time.sleep(0.05)
            other_may_end.wait(10)

    other = threading.Thread(target=other_session, daemon=True)
    other.start()
    turn_taken.wait(10)
    threading.Timer(1.5, other_may_end.set).start()
    at.default_timeout = 30
    upload(at, "gt", ("gt.jsonl", _ground_truth(50)))
    other.join(10)
    assert shown and set(shown) == {"waiting for 1 other upload to finish"}
    assert any("gt.jsonl: loaded as the ground truth" in unescape(s.value) for s in at.success)


def test_the_dashboard_allocates_memory_it_can_give_back(monkeypatch, tmp_path):
    """``kieval dashboard`` starts the server on glibc's malloc (Python objects and Arrow
    buffers), which returns what closed sessions held; a variable the user set wins."""
    from kieval_app.serving import launch

    started_with = {}

    def execve(path, args, env):
        started_with.update(env)

    monkeypatch.setattr(launch.os, "execve", execve)
    monkeypatch.setattr(launch.os, "chdir", lambda path: None)
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    launch.launch(8501, "localhost", limits={"KIEVAL_MAX_HEAVY_LOADS": "3"})
    assert started_with["PYTHONMALLOC"] == "malloc"
    assert started_with["ARROW_DEFAULT_MEMORY_POOL"] == "system"
    assert started_with["MALLOC_ARENA_MAX"] == "4"  # the user's own setting
    assert started_with["KIEVAL_MAX_HEAVY_LOADS"] == "3"


def test_the_server_switches_threads_often_enough_for_clicks_beside_a_read():
    """A page's script waits for the GIL at every release beside a read; the server's
    switch interval is 1 ms instead of 5 (bench/README.md: 2.1-2.5 s -> 0.93 s per switch)."""
    import sys

    from kieval_app.serving import tuning

    started()
    assert sys.getswitchinterval() == pytest.approx(tuning.SWITCH_INTERVAL_S)


def test_a_server_with_nobody_gives_back_its_free_memory_at_every_check():
    """After every tab closed, the server's RSS crept up 30-40 MiB in a minute with no more
    objects alive (glibc's trimmed free pages touched again by the server's own timers):
    a check that finds no session trims again; one with a session does not (a trim's
    garbage collection would hold the GIL against its clicks)."""
    trims = []

    class Counting(Store):
        def trim(self) -> None:
            trims.append(1)

    runtime, now = FakeRuntime(), [0.0]
    reaper = Reaper(Counting(), runtime, lambda call: call(), grace=30, clock=lambda: now[0])
    assert reaper.sweep() == [] and len(trims) == 1  # nobody here
    runtime.active = {"tab"}
    reaper.register("tab", "s")
    reaper.sweep()
    assert len(trims) == 1
    runtime.active = set()
    now[0] = 40.0
    reaper.sweep()  # seen gone
    now[0] = 80.0
    assert reaper.sweep() == ["tab"] and len(trims) == 1  # closed: its memory is freed at the next check
    reaper.sweep()
    assert len(trims) == 2
    reaper.sweep()
    assert len(trims) == 3


def test_a_server_with_nobody_ends_its_spare_children():
    """The children kept for the next upload (kieval_app.serving.isolation) hold ~23 MiB of
    their own each: a check that finds nobody ends them; with a session there, they stay."""
    import os

    from kieval_app.serving import isolation
    from kieval_app.serving.isolation import run_isolated

    runtime = FakeRuntime()
    runtime.active = {"tab"}
    reaper = Reaper(Store(), runtime, lambda call: call(), grace=30, clock=lambda: 0.0)
    reaper.register("tab", "s")
    spare = run_isolated(os.getpid)
    reaper.sweep()
    assert spare in {c.process.pid for c in isolation._spare}
    runtime.active = set()
    reaper = Reaper(Store(), runtime, lambda call: call(), grace=30, clock=lambda: 0.0)
    reaper.sweep()
    assert not isolation._spare
