"""Closed tabs release what they held within a minute, by a timer.

Streamlit keeps a disconnected session (its session state: the uploaded files, the
workspace and its results) for two minutes, in case the browser comes back, and drops it
only when its session storage is next written, that is when some other session
disconnects. On a quiet server the memory of a closed tab therefore stayed until the next
visitor left (issue 22, finding 3: 1,920 MiB held after 155 s idle).

The :class:`Reaper` checks every ``every`` seconds which registered sessions are no longer
connected; a session disconnected for ``grace`` seconds is closed for good: its files and
results are dropped from its state (Streamlit's runtime loop may keep a closed session's
object until another session comes or goes), Streamlit closes it as it would after its
TTL, the store releases what it held, and at the next check the freed memory is returned
to the operating system; so it is at every check that finds no session at all (and the
spare children of :mod:`~kieval_app.serving.isolation` are ended then): after a
release, glibc's heap is mostly free pages, which the server's own small allocations
(timers, the event loop) touch again, one by one, if nothing trims them (+30-40 MiB within
a minute in bench_admission, with no more objects alive). A browser that comes back
within ``grace`` finds its session as it was; later, it starts a new one (the page says
so, and offers to reopen a saved run).

Streamlit's ``Runtime.close_session`` must run on the server's event loop; the reaper
hands it over with ``call_soon_threadsafe`` (the loop is reached through the runtime's
``_get_async_objs``, Streamlit 1.67). Without a running server (AppTest) nothing happens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from . import isolation
from .store import Store

#: Seconds a disconnected session is kept (a network blip, a laptop lid) before it is closed.
GRACE_S = 30.0
#: Seconds between two checks.
EVERY_S = 10.0


class Reaper:
    """Closes sessions disconnected for longer than ``grace`` seconds (module docstring).

    ``runtime`` is Streamlit's ``Runtime`` (or a stand-in with ``is_active_session(id)``
    and ``close_session(id)``); ``on_loop`` runs a call on its event loop.
    """

    def __init__(self, store: Store, runtime, on_loop: Callable[[Callable[[], None]], None],
                 grace: float = GRACE_S, every: float = EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.runtime = runtime
        self.on_loop = on_loop
        self.grace = grace
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[str, Callable[[], None]]] = {}  # Streamlit's id -> (store's, forget)
        self._gone_since: dict[str, float] = {}
        self._thread: threading.Thread | None = None
        self._trim_next = False

    def register(self, streamlit_id: str, store_id: str, forget: Callable[[], None] = lambda: None) -> None:
        """A session to watch: its id in Streamlit and in the store, and how to drop its state."""
        with self._lock:
            self._sessions[streamlit_id] = (store_id, forget)
            self._gone_since.pop(streamlit_id, None)

    def sweep(self) -> list[str]:
        """One check: close the sessions gone for ``grace`` seconds; returns their ids."""
        now = self.clock()
        closed = []
        with self._lock:
            for streamlit_id, held in list(self._sessions.items()):
                if self.runtime.is_active_session(streamlit_id):
                    self._gone_since.pop(streamlit_id, None)
                    continue
                since = self._gone_since.setdefault(streamlit_id, now)
                if now - since >= self.grace:
                    del self._sessions[streamlit_id], self._gone_since[streamlit_id]
                    closed.append((streamlit_id, held))
            nobody = not self._sessions
        # the sessions closed at the last check are gone by now; and with nobody here, the
        # free heap pages the server's own timers touched again go back (glibc keeps them)
        if self._trim_next or (nobody and not closed):
            self.store.trim()
        if nobody:  # the spare children wait for uploads nobody is here to make
            isolation.end_spares()
        for streamlit_id, (store_id, forget) in closed:
            forget()  # Streamlit may keep a closed session's object a while (a loop's variable)
            self.on_loop(lambda sid=streamlit_id: self.runtime.close_session(sid))
            self.store.release_session(store_id)
        self._trim_next = bool(closed)
        return [s for s, _ in closed]

    def start(self) -> Reaper:
        def run() -> None:
            while True:
                time.sleep(self.every)
                try:
                    self.sweep()
                except Exception:  # a check that failed is tried again at the next tick
                    continue

        self._thread = threading.Thread(target=run, name="kieval-reaper", daemon=True)
        self._thread.start()
        return self


def streamlit_reaper(store: Store) -> Reaper | None:
    """A started reaper for this Streamlit server; None when no server runs (AppTest)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    runtime = Runtime.instance()
    try:
        loop = runtime._get_async_objs().eventloop
    except (AttributeError, RuntimeError):  # another Streamlit, or not started: no timer
        return None
    return Reaper(store, runtime, loop.call_soon_threadsafe).start()
