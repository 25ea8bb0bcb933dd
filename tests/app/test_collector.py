"""The server's garbage collections (kieval_app.serving.collector): what survives a full collection
is frozen, so Streamlit's collection after every rerun scans only the new objects; a thaw
(a session's end, the store dropping entries, the periodic one) lets the reference cycles
that died while frozen be collected."""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass

import pytest

from kieval_app.serving.collector import Collector
from kieval_app.serving.store import Store

MIB = 2**20


@dataclass(eq=False)
class Cycle:
    """A value that only the cycle collector can free (it refers to itself); the store
    counts its payload's bytes."""

    payload: bytes = b""

    def __post_init__(self) -> None:
        self.me = self


class Leaf:
    """A value freed by its reference count."""


@pytest.fixture
def clock():
    now = [0.0]
    yield now
    gc.unfreeze()


@pytest.fixture
def collector(clock):
    collector = Collector(thaw_every_s=60, clock=lambda: clock[0])
    collector.install()
    yield collector
    collector.uninstall()


def test_what_survives_a_full_collection_is_frozen_and_new_objects_are_not(collector):
    survivor = Cycle()
    gc.collect()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    assert not any(o is survivor for o in gc.get_objects())  # frozen: in no generation
    newcomer = Cycle()
    assert any(o is newcomer for o in gc.get_objects())  # scanned by the next collection
    collector.install()  # twice: one hook
    assert gc.callbacks.count(collector._after) == 1


def test_a_cycle_released_while_frozen_waits_for_the_thaw(collector):
    value = Cycle()
    gc.collect()  # value survives: frozen
    ref = weakref.ref(value)
    del value
    gc.collect()
    assert ref() is not None  # frozen: not scanned, so its cycle is not found
    collector.thaw()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None
    assert gc.get_freeze_count() > 0  # the full collection's survivors are frozen again


def test_an_object_without_cycles_is_freed_at_once_even_when_frozen(collector):
    value = Leaf()
    gc.collect()
    ref = weakref.ref(value)
    del value
    assert ref() is None


def test_a_full_scan_comes_back_after_thaw_every_s(collector, clock):
    value = Cycle()
    gc.collect()
    ref = weakref.ref(value)
    del value
    clock[0] = 59.0
    gc.collect()
    assert ref() is not None and gc.get_freeze_count() > 0
    clock[0] = 60.0
    gc.collect()  # due: this one thaws instead of freezing
    assert gc.get_freeze_count() == 0
    gc.collect()  # and the next one scans everything
    assert ref() is None
    assert gc.get_freeze_count() > 0
    clock[0] = 100.0  # 40 s after that full scan: frozen again, not thawed
    gc.collect()
    assert gc.get_freeze_count() > 0


def test_uninstall_thaws_and_stops_freezing(clock):
    collector = Collector(clock=lambda: clock[0])
    collector.install()
    gc.collect()
    assert gc.get_freeze_count() > 0
    collector.uninstall()
    assert gc.get_freeze_count() == 0 and collector._after not in gc.callbacks
    gc.collect()
    assert gc.get_freeze_count() == 0


def test_a_session_ending_lets_its_cycles_be_collected(collector):
    store = Store(idle_bytes=0, collector=collector)
    store.hold("a", ["value"])
    store.put("value", Cycle())
    ref = weakref.ref(store.peek("value"))
    gc.collect()  # frozen while held
    store.release_session("a")  # nobody holds it: dropped (idle budget 0), thawed, collected
    assert store.peek("value") is None
    assert ref() is None


def test_the_store_thaws_after_dropping_a_quarter_of_its_idle_budget(collector):
    store = Store(idle_bytes=8 * MIB, collector=collector)
    store.hold("a", ["small", "big"])
    store.put("small", Cycle(b"x" * MIB))
    store.put("big", Cycle(b"x" * (8 * MIB)))
    gc.collect()
    small = weakref.ref(store.peek("small"))
    store.hold("a", ["big"])  # 1 MiB idle: within the budget, nothing dropped
    store.put("filler", b"x" * (7 * MIB + MIB // 2))  # idle 8.5 MiB: "small" (1 MiB) is dropped
    assert store.peek("small") is None
    gc.collect()
    assert small() is not None  # 1 MiB dropped, below 2 MiB: still frozen, no thaw yet
    big = weakref.ref(store.peek("big"))
    store.hold("a", [])  # "big" and "filler" idle, 15.5 MiB: "big", the oldest, is dropped
    assert store.peek("big") is None and store.peek("filler") is not None
    gc.collect()
    assert small() is None and big() is None  # 9 MiB dropped: thawed, the full collection found them
