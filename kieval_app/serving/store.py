"""The server's shared results: computed once per content, held while someone uses them.

Every session of one server process reads its datasets, evaluations and derived views
from one :class:`Store`, keyed by the content digests of the files and the options, so
two sessions with the same files share one copy and a changed file is never served from
a stale entry. The store is

* **single-flight**: a key computed by one session is waited for, not recomputed, by
  another;
* **referenced**: each session declares the keys its current page needs
  (:meth:`Store.hold`); when a session ends (:meth:`Store.release_session`) or its inputs
  change, what nobody holds any more is released;
* **bounded in bytes**: entries nobody holds are kept, most recent first, up to
  ``idle_bytes`` (so the sample stays warm for the next visitor); held entries are never
  evicted. Freed memory is returned to the operating system (``malloc_trim``); with a
  :class:`~kieval_app.serving.collector.Collector`, a session's end and every ``idle_bytes / 4``
  dropped thaw what it froze, so that their reference cycles are collected too;
* **cancellable**: background work (:meth:`Store.submit`) stops at its next checkpoint
  when no live session wants its result any more;
* **admitting**: work that computes a value (a load, a scoring) reserves its estimated
  bytes against the process's memory budget (:meth:`Store.reserve`); when they do not fit,
  once idle entries are dropped, it is not started and :class:`Busy` says why, with the
  figures. In use is the larger of what the store accounts for (entries, reservations,
  the process as it started) and the process's resident memory.
* **taking turns**: at most ``heavy_slots`` heavy pieces of work (estimated at
  :data:`~kieval_core.limits.HEAVY_BYTES` or more) run at once; the others wait their
  turn, first come first served, and their caller is told how many are ahead
  (``waiting``). The app runs every read and scoring in a child process
  (:mod:`kieval_app.compute`), off this process's GIL, but the machine's few cores are
  shared with the sessions' scripts and each result is unpickled here: more in parallel
  finish no sooner and make every other session's clicks slow. Only a thread's
  outermost reservation waits (a scoring's nested reads run in its turn), and a value is
  claimed only once its reservation is made, so a thread that computes never waits for a
  turn and nobody waits for a value whose computer waits: no deadlock.

Nothing here imports Streamlit: the app creates one store per process and tells it
which session holds what.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future
from typing import Any

import numpy as np
import pandas as pd

from kieval_core.limits import HEAVY_BYTES

from .collector import Collector
from .tuning import IDLE_BYTES, MIB, release_memory

#: Seconds between two calls of a waiting caller's ``waiting`` callback.
WAIT_TICK_S = 0.5
#: Items of a large container measured by :func:`approximate_size` (the rest is scaled).
SAMPLE = 1000


def process_rss() -> int:
    """This process's resident memory in bytes (0 where ``/proc`` is absent)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Busy(Exception):
    """Work the server cannot hold now: not started; the message gives the figures."""


def approximate_size(value: Any, _seen: set[int] | None = None) -> int:
    """Bytes held by a result: frames, arrays, dataclasses, mappings and sequences of them.

    Text columns count their characters; the estimate errs on the large side. Large
    containers (object arrays, text columns, lists, tuples, dicts) are measured on their
    first :data:`SAMPLE` items: a walk of every item held the GIL against every session's
    clicks (1 s for the structures of a 51 MB ground truth's 60,000 documents, at every
    heavy upload; py-spy in bench_admission).

    >>> approximate_size(np.zeros(1000))
    8000
    """
    seen = _seen if _seen is not None else set()
    if id(value) in seen or value is None:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return value.nbytes + sum(approximate_size(v, seen) for v in value.ravel()[:SAMPLE]) * max(
                1, value.size // SAMPLE
            )
        return int(value.nbytes)
    if isinstance(value, pd.DataFrame):
        # each value[c] is a new Series, freed at once: its id is reused by the next one, so
        # columns are measured without the ``seen`` set (they cannot be shared anyway)
        return sum(_series_size(value[c]) for c in value.columns) + value.index.memory_usage()
    if isinstance(value, pd.Series):
        return _series_size(value)
    if isinstance(value, (str, bytes)):
        return len(value) + 49
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        held = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        held.update(getattr(value, "__dict__", {}))  # cached properties
        return sum(approximate_size(v, seen) for v in held.values()) + 64
    if isinstance(value, dict):
        sizes = [approximate_size(k, seen) + approximate_size(v, seen)
                 for k, v in itertools.islice(value.items(), SAMPLE)]
        return _scaled(len(value), sizes) + 64
    if isinstance(value, (list, tuple)):
        items = itertools.islice(value, SAMPLE)
        return _scaled(len(value), [approximate_size(v, seen) for v in items]) + 8 * len(value) + 56
    return 64


def _scaled(n: int, sizes: list[int]) -> int:
    """The sizes of a container's first :data:`SAMPLE` items, scaled to its ``n`` items.

    >>> _scaled(10_000, [50] * 1000)
    500000
    """
    return sum(sizes) * n // max(len(sizes), 1)


def _series_size(series: pd.Series) -> int:
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        sample = series.iloc[:SAMPLE]
        per_value = (sum(len(str(v)) for v in sample) / max(len(sample), 1)) + 57
        return int(per_value * len(series))
    return int(series.memory_usage(index=False, deep=False))


@dataclasses.dataclass
class _Entry:
    value: Any
    size: int
    parts: tuple = ()  # keys of the entries it was made from: it is dropped with them


@dataclasses.dataclass(frozen=True)
class _Reservation:
    cost: int  # bytes reserved against the budget
    turn: bool  # whether it holds one of the heavy turns


class Task:
    """Background work for a key: its progress, its result (a future) and its cancellation."""

    def __init__(self, key: Hashable, label: str) -> None:
        self.key = key
        self.label = label
        self.cancelled = threading.Event()
        self.done_steps = 0
        self.total_steps = 1
        self.future: Future | None = None

    def progress(self, done: int, total: int) -> None:
        self.done_steps, self.total_steps = done, max(total, 1)

    def checkpoint(self) -> None:
        """Called by the work between steps: stops it when nobody wants the result."""
        if self.cancelled.is_set():
            raise TaskCancelled(self.label)

    @property
    def done(self) -> bool:
        return self.future is not None and self.future.done()


class TaskCancelled(Exception):
    """Raised at a checkpoint of a task nobody waits for any more."""


class Store:
    """Results shared by the sessions of one server process (see the module docstring).

    Parameters
    ----------
    idle_bytes : int
        Budget of the entries no live session holds.
    workers : int
        Background tasks run at once (:meth:`submit`).
    budget : int or None
        The process's memory budget in bytes (:attr:`kieval_core.limits.Limits.memory_bytes`);
        None admits everything.
    heavy_slots : int or None
        How many heavy pieces of work run at once (:attr:`kieval_core.limits.Limits.heavy_loads`);
        None: no limit.
    heavy_bytes : int
        The estimated cost from which work is heavy.
    collector : Collector or None
        The process's garbage collection policy, thawed when values are released (a
        session ends, entries are dropped); None: Python's own.
    """

    def __init__(self, idle_bytes: int = IDLE_BYTES, workers: int = 1, budget: int | None = None,
                 heavy_slots: int | None = None, heavy_bytes: int = HEAVY_BYTES,
                 collector: Collector | None = None) -> None:
        self.idle_bytes = idle_bytes
        self.collector = collector
        self._dropped = 0  # bytes of entries dropped since the collector's last thaw
        self.budget = budget
        self.heavy_slots = heavy_slots
        self.heavy_bytes = heavy_bytes
        self._baseline = process_rss()
        self._reserved = 0
        self._own: dict[str, int] = {}
        self._lock = threading.RLock()
        self._turns = threading.Condition(self._lock)
        self._heavy_running = 0
        self._queue: list[object] = []  # tickets of the heavy work waiting, first come first
        self._depth = threading.local()  # reservations the current thread is inside
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._computing: dict[Hashable, threading.Event] = {}
        self._holders: dict[str, set[Hashable]] = {}
        self._tasks: dict[Hashable, Task] = {}
        self._slots = threading.Semaphore(workers)  # background tasks running at once

    # --- values ----------------------------------------------------------------------

    def get(self, key: Hashable, compute: Callable[[], Any], cost: int = 0,
            waiting: Callable[[int], None] | None = None) -> Any:
        """The value of ``key``, computed once (other callers wait for the first); the
        computation reserves ``cost`` bytes first (:meth:`reserve`: :class:`Busy` when they
        do not fit; ``waiting(n)`` is told how many are ahead while it waits for its turn)."""
        while True:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    self._entries.move_to_end(key)
                    return entry.value
                computing = self._computing.get(key)
            if computing is not None:
                computing.wait()
                continue
            with self.reserve(cost, waiting):
                with self._lock:  # claimed only now: whoever computes holds its turn already
                    if key in self._entries or key in self._computing:
                        continue
                    self._computing[key] = threading.Event()
                try:
                    value = compute()
                    self.put(key, value)
                finally:
                    with self._lock:
                        self._computing.pop(key).set()
                return value

    def put(self, key: Hashable, value: Any, parts: tuple = ()) -> None:
        """Keep ``value`` under ``key``. ``parts`` are the keys of the entries it was made
        from and refers to (an evaluation: its datasets and models): their bytes are not
        counted again, and it is dropped when any of them is (it would keep their memory)."""
        with self._lock:
            held = [e.value for k in parts if (e := self._entries.get(k)) is not None]
        seen: set[int] = set()
        approximate_size(held, seen)  # outside the lock: it walks the values
        size = approximate_size(value, seen)
        with self._lock:
            self._entries[key] = _Entry(value, size, parts)
            self._entries.move_to_end(key)
        self._evict()

    def peek(self, key: Hashable) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            return None if entry is None else entry.value

    # --- admission ---------------------------------------------------------------------

    def in_use(self) -> int:
        """Bytes in use: the larger of what the store accounts for and the resident memory."""
        with self._lock:
            accounted = (self._baseline + self._reserved + sum(self._own.values())
                         + sum(e.size for e in self._entries.values()))
        return max(accounted, process_rss())

    @contextlib.contextmanager
    def reserve(self, cost: int, waiting: Callable[[int], None] | None = None):
        """Reserve ``cost`` bytes for the work in the ``with`` block, or raise :class:`Busy`
        (idle entries are dropped and freed memory returned first). Heavy work first waits
        for its turn (module docstring), calling ``waiting(n)`` every :data:`WAIT_TICK_S`
        with the number of heavy pieces of work ahead of it; what does not fit the budget is
        refused at once, without waiting."""
        reservation = self._acquire(cost, waiting)
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            self._release(reservation)

    def _acquire(self, cost: int, waiting: Callable[[int], None] | None) -> _Reservation:
        """What :meth:`reserve` holds: the turn (for heavy work outside any other) and the bytes."""
        turn = getattr(self._depth, "n", 0) == 0 and self.heavy_slots is not None and cost >= self.heavy_bytes
        self._admit(cost)  # refused now rather than after a wait
        if turn:
            self._wait_turn(waiting)
        try:
            with self._lock:
                self._admit(cost)
                held = cost if cost > 0 and self.budget is not None else 0
                self._reserved += held
        except BaseException:
            if turn:
                self._end_turn()
            raise
        return _Reservation(held, turn)

    def _release(self, reservation: _Reservation) -> None:
        with self._lock:
            self._reserved -= reservation.cost
        if reservation.turn:
            self._end_turn()

    def _end_turn(self) -> None:
        with self._turns:
            self._heavy_running -= 1
            self._turns.notify_all()

    def _admit(self, cost: int) -> None:
        """Raise :class:`Busy` when ``cost`` does not fit the budget, idle entries dropped."""
        if cost <= 0 or self.budget is None:
            return
        with self._lock:
            if self.in_use() + cost > self.budget and self._drop_idle():
                self.trim()
            used = self.in_use()
            if used + cost > self.budget:
                raise Busy(self.busy_message(used))

    def _wait_turn(self, waiting: Callable[[int], None] | None) -> None:
        """Wait until fewer than ``heavy_slots`` heavy pieces of work run and every one that
        came earlier has started; then this one runs (the caller ends its turn)."""
        ticket = object()
        with self._turns:
            self._queue.append(ticket)
        try:
            while True:
                with self._turns:
                    if self._heavy_running < self.heavy_slots and self._queue[0] is ticket:
                        self._queue.pop(0)
                        self._heavy_running += 1
                        self._turns.notify_all()  # the next in the queue may start too
                        return
                    ahead = self._heavy_running + self._queue.index(ticket)
                    if waiting is None:
                        self._turns.wait()
                        continue
                    self._turns.wait(WAIT_TICK_S)
                    ready = self._heavy_running < self.heavy_slots and self._queue[0] is ticket
                if not ready:
                    waiting(ahead)  # outside the lock: it may update a page (or be interrupted)
        except BaseException:
            with self._turns:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                    self._turns.notify_all()
            raise

    def busy_message(self, used: int | None = None) -> str:
        used = self.in_use() if used is None else used
        with self._lock:
            sessions = len(self._holders)
        return (f"the server is busy ({sessions} session{'' if sessions == 1 else 's'}, "
                f"{used / MIB:,.0f} of {self.budget / MIB:,.0f} MB in use); try again later or run "
                "`kieval evaluate` locally")

    def _drop_idle(self) -> bool:
        """Drop every entry no session holds (under memory pressure)."""
        with self._lock:
            held = self._held()
            idle = [k for k in self._entries if k not in held]
            for key in idle:
                self._dropped += self._entries.pop(key).size
            return bool(idle)

    def held_bytes(self, session: str) -> int:
        """Bytes of the entries a session holds (shared ones count in full)."""
        with self._lock:
            keys = self._holders.get(session, set())
            return sum(e.size for k, e in self._entries.items() if k in keys)

    # --- who holds what ----------------------------------------------------------------

    def hold(self, session: str, keys: Iterable[Hashable], own_bytes: int = 0) -> None:
        """The keys a session's current page needs (replaces what it held before), and the
        bytes it holds outside the store (``own_bytes``: its uploaded files)."""
        with self._lock:
            before = self._holders.get(session, set())
            now = set(keys)
            self._holders[session] = now
            self._own[session] = own_bytes
            dropped = before - now
        if dropped:
            self._evict()
        self._cancel_unwanted()

    def held_keys(self, session: str) -> set[Hashable]:
        """The keys a session holds (see :meth:`hold`)."""
        with self._lock:
            return set(self._holders.get(session, ()))

    def release_session(self, session: str) -> None:
        """A session ended: what only it held becomes idle (and may be evicted)."""
        with self._lock:
            self._holders.pop(session, None)
            self._own.pop(session, None)
        self._cancel_unwanted()
        if self.collector is not None:  # its state's cycles were frozen with it
            self.collector.thaw()
        if self._evict():
            self.trim()

    def trim(self) -> None:
        """Collect garbage (frozen objects too) and give freed memory back to the operating
        system: the C heap's and Arrow's memory pool's (mimalloc keeps freed pages for reuse
        otherwise; the values of every dataset are Arrow text)."""
        self._thaw()
        release_memory()

    def _held(self) -> set[Hashable]:
        return set().union(*self._holders.values()) if self._holders else set()

    def _evict(self) -> bool:
        """Drop the least recently used idle entries beyond the idle budget."""
        with self._lock:
            held = self._held()
            idle = [(k, e.size) for k, e in self._entries.items() if k not in held]
            excess = sum(size for _, size in idle) - self.idle_bytes
            gone = set()
            for key, size in idle:  # oldest first
                if excess <= 0:
                    break
                del self._entries[key]
                excess -= size
                self._dropped += size
                gone.add(key)
            for key in [k for k, e in self._entries.items() if k not in held and gone.intersection(e.parts)]:
                self._dropped += self._entries.pop(key).size  # made from what went: it would keep it
            dropped = bool(gone)
            thaw = dropped and self._dropped >= self.idle_bytes // 4
        if thaw:
            self._thaw()
        return dropped

    def _thaw(self) -> None:
        """Let the next full collection see the values dropped since the last thaw."""
        with self._lock:
            self._dropped = 0
        if self.collector is not None:
            self.collector.thaw()

    # --- background work ---------------------------------------------------------------

    def submit(self, key: Hashable, label: str, work: Callable[[Task], Any]) -> Task:
        """Run ``work(task)`` in the background unless it already runs or is done; its
        result is stored under ``key``. A cancelled or failed task can be submitted again."""
        with self._lock:
            task = self._tasks.get(key)
            if task is not None and not (task.done and (task.cancelled.is_set() or task.future.exception())):
                return task
            task = Task(key, label)
            self._tasks[key] = task

        def run() -> Any:
            task.checkpoint()
            value = work(task)
            self.put(key, value)
            return value

        task.future = Future()
        threading.Thread(target=self._run, args=(task.future, run), name="kieval-background",
                         daemon=True).start()
        return task

    def _run(self, future: Future, run: Callable[[], Any]) -> None:
        """A background task's thread: waits for one of the ``workers`` slots, then runs.
        A daemon thread, not a pool's: the interpreter's exit waits for a pool's threads,
        so a server told to stop (SIGTERM) would wait for the work to finish; the work's
        child process ends with the server (:mod:`~kieval_app.serving.isolation`)."""
        with self._slots:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(run())
            except BaseException as exc:  # noqa: BLE001 - the task's outcome, read by its waiters
                future.set_exception(exc)

    def task(self, key: Hashable) -> Task | None:
        with self._lock:
            return self._tasks.get(key)

    def _cancel_unwanted(self) -> None:
        with self._lock:
            held = self._held()
            for key, task in list(self._tasks.items()):
                if key not in held and not task.done:
                    task.cancelled.set()
                if task.done:
                    del self._tasks[key]

    # --- what the load benchmark and the tests read ----------------------------------------

    def stats(self) -> dict:
        with self._lock:
            held = self._held()
            sizes = {k: e.size for k, e in self._entries.items()}
        return {
            "entries": len(sizes),
            "bytes": sum(sizes.values()),
            "held_bytes": sum(s for k, s in sizes.items() if k in held),
            "sessions": len(self._holders),
            "reserved": self._reserved,
            "budget": self.budget,
            "heavy_running": self._heavy_running,
            "heavy_waiting": len(self._queue),
            "time": time.time(),
        }
