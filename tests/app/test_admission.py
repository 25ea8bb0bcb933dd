"""Admission and release in the server's store (SPEC 8b, issue 22 finding 3): every load
and scoring reserves its estimated bytes against the process budget, a full server
answers "busy" with its figures and starts nothing, a session is held to its own limit,
and a closed tab's session is closed by a timer, not by the next visitor."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_pages import errors, started, upload, workspace

from kieval_app import compute
from kieval_app.reaper import Reaper
from kieval_app.sources import AppOptions, Source, Sources
from kieval_app.store import Busy, Store
from kieval_core.limits import LimitExceeded

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
