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
  evicted. Freed memory is returned to the operating system (``malloc_trim``);
* **cancellable**: background work (:meth:`Store.submit`) stops at its next checkpoint
  when no live session wants its result any more;
* **admitting**: work that computes a value (a load, a scoring) reserves its estimated
  bytes against the process's memory budget (:meth:`Store.reserve`); when they do not fit,
  once idle entries are dropped, it is not started and :class:`Busy` says why, with the
  figures. In use is the larger of what the store accounts for (entries, reservations,
  the process as it started) and the process's resident memory.

Nothing here imports Streamlit: the app creates one store per process and tells it
which session holds what.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

#: Default byte budget of entries no session holds (``KIEVAL_IDLE_CACHE_MB`` overrides).
IDLE_BYTES = 64 * 2**20
MIB = 2**20


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

    Text columns count their characters; the estimate errs on the large side.

    >>> approximate_size(np.zeros(1000))
    8000
    """
    seen = _seen if _seen is not None else set()
    if id(value) in seen or value is None:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return value.nbytes + sum(approximate_size(v, seen) for v in value.ravel()[:1000]) * max(
                1, value.size // 1000
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
        return sum(approximate_size(k, seen) + approximate_size(v, seen) for k, v in value.items()) + 64
    if isinstance(value, (list, tuple)):
        return sum(approximate_size(v, seen) for v in value) + 8 * len(value) + 56
    return 64


def _series_size(series: pd.Series) -> int:
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        sample = series.iloc[:1000]
        per_value = (sum(len(str(v)) for v in sample) / max(len(sample), 1)) + 57
        return int(per_value * len(series))
    return int(series.memory_usage(index=False, deep=False))


def _malloc_trim() -> None:
    """Give freed heap memory back to the operating system (glibc keeps it otherwise)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@dataclasses.dataclass
class _Entry:
    value: Any
    size: int


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
        Threads for background work.
    budget : int or None
        The process's memory budget in bytes (:attr:`kieval_core.limits.Limits.memory_bytes`);
        None admits everything.
    """

    def __init__(self, idle_bytes: int = IDLE_BYTES, workers: int = 1, budget: int | None = None) -> None:
        self.idle_bytes = idle_bytes
        self.budget = budget
        self._baseline = process_rss()
        self._reserved = 0
        self._own: dict[str, int] = {}
        self._lock = threading.RLock()
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._computing: dict[Hashable, threading.Event] = {}
        self._holders: dict[str, set[Hashable]] = {}
        self._tasks: dict[Hashable, Task] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kieval-background")

    # --- values ----------------------------------------------------------------------

    def get(self, key: Hashable, compute: Callable[[], Any], cost: int = 0) -> Any:
        """The value of ``key``, computed once (other callers wait for the first); the
        computation reserves ``cost`` bytes first (:meth:`reserve`: :class:`Busy` when
        they do not fit)."""
        while True:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    self._entries.move_to_end(key)
                    return entry.value
                waiting = self._computing.get(key)
                if waiting is None:
                    self._computing[key] = threading.Event()
                    break
            waiting.wait()
        try:
            with self.reserve(cost):
                value = compute()
        except BaseException:
            with self._lock:
                self._computing.pop(key).set()
            raise
        self.put(key, value)
        with self._lock:
            self._computing.pop(key).set()
        return value

    def put(self, key: Hashable, value: Any) -> None:
        size = approximate_size(value)
        with self._lock:
            self._entries[key] = _Entry(value, size)
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
    def reserve(self, cost: int):
        """Reserve ``cost`` bytes for the work in the ``with`` block, or raise :class:`Busy`
        (idle entries are dropped and freed memory returned first)."""
        if cost <= 0 or self.budget is None:
            yield
            return
        with self._lock:
            if self.in_use() + cost > self.budget and self._drop_idle():
                self.trim()
            used = self.in_use()
            if used + cost > self.budget:
                raise Busy(self.busy_message(used))
            self._reserved += cost
        try:
            yield
        finally:
            with self._lock:
                self._reserved -= cost

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
                del self._entries[key]
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

    def release_session(self, session: str) -> None:
        """A session ended: what only it held becomes idle (and may be evicted)."""
        with self._lock:
            self._holders.pop(session, None)
            self._own.pop(session, None)
        self._cancel_unwanted()
        if self._evict():
            self.trim()

    @staticmethod
    def trim() -> None:
        """Collect garbage and give freed memory back to the operating system: the C heap's
        and Arrow's memory pool's (mimalloc keeps freed pages for reuse otherwise; the
        values of every dataset are Arrow text)."""
        gc.collect()
        _malloc_trim()
        pa.default_memory_pool().release_unused()

    def _held(self) -> set[Hashable]:
        return set().union(*self._holders.values()) if self._holders else set()

    def _evict(self) -> bool:
        """Drop the least recently used idle entries beyond the idle budget."""
        with self._lock:
            held = self._held()
            idle = [(k, e.size) for k, e in self._entries.items() if k not in held]
            excess = sum(size for _, size in idle) - self.idle_bytes
            dropped = False
            for key, size in idle:  # oldest first
                if excess <= 0:
                    break
                del self._entries[key]
                excess -= size
                dropped = True
            return dropped

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

        task.future = self._pool.submit(run)
        return task

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
            "time": time.time(),
        }
