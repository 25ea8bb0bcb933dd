"""The server's garbage collections: what survived the last full one is not scanned again.

Streamlit collects every generation after every script run (``runner.postScriptGC``), on
the script's thread and holding the GIL, so the browser hears that the run ended only
once the collection is over. A full collection scans every object the process tracks:
the libraries, the loaded datasets and results in the store, the sessions. With results
in memory that is ~100 ms per rerun, two thirds of the server's time for moving to the
next document (bench/README.md).

:class:`Collector` freezes (:func:`gc.freeze`) what survives each full collection, so the
next one scans only what was made since. Frozen objects are still freed when their last
reference goes; only those in reference cycles wait, until a **thaw** (:func:`gc.unfreeze`)
makes the next full collection scan everything again. A thaw comes

* when a session ends or the store drops entries (:class:`~kieval_app.serving.store.Store` calls
  :meth:`Collector.thaw`; the store's :meth:`~kieval_app.serving.store.Store.trim` then collects at
  once), so released memory is returned as before;
* at most :data:`THAW_EVERY_S` after the last full collection of everything, for the
  cycles that outlived a collection and died later (a run's objects alive during an
  automatic collection in its middle).

A thaw costs one rerun its full collection; between thaws a rerun's collection scans
only its own new objects.

Nothing here imports Streamlit; :func:`kieval_app.session.store` installs the collector
in the server process.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from .tuning import THAW_EVERY_S


class Collector:
    """Freezes what survives each full collection; thawed on request and periodically."""

    def __init__(self, thaw_every_s: float = THAW_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.thaw_every_s = thaw_every_s
        self._clock = clock
        self._last_full = clock()
        self._thawed = False  # the next full collection sees every object

    def install(self) -> None:
        """Start freezing after each full collection of this process (idempotent)."""
        if self._after not in gc.callbacks:
            gc.callbacks.append(self._after)

    def uninstall(self) -> None:
        """Stop freezing and thaw what is frozen."""
        if self._after in gc.callbacks:
            gc.callbacks.remove(self._after)
        gc.unfreeze()

    def thaw(self) -> None:
        """Let the next full collection scan every object (objects released since the last
        freeze may sit in reference cycles); cheap: it only moves one list."""
        self._thawed = True
        gc.unfreeze()

    def _after(self, phase: str, info: dict) -> None:
        """``gc.callbacks`` hook: after a full collection, freeze its survivors, or thaw
        when a full scan is due."""
        if phase != "stop" or info.get("generation") != 2:
            return
        now = self._clock()
        if self._thawed:  # this collection scanned everything
            self._thawed = False
            self._last_full = now
        elif now - self._last_full >= self.thaw_every_s:
            self.thaw()
            return
        gc.freeze()
