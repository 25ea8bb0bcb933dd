"""The server's memory and garbage-collection settings, in one place.

Each was measured (bench/README.md says how); the modules that apply them import them
from here:

* :data:`ALLOCATOR_ENV`: how the server process allocates (:mod:`~kieval_app.serving.launch`
  sets it before Streamlit starts);
* :data:`SWITCH_INTERVAL_S`: the GIL switch interval of the server
  (:func:`kieval_app.session.store`);
* :data:`IDLE_BYTES` and :func:`idle_bytes`: what the store keeps of entries no session
  holds (:class:`~kieval_app.serving.store.Store`);
* :data:`THAW_EVERY_S`: how long what survived a full collection stays frozen
  (:class:`~kieval_app.serving.collector.Collector`);
* :func:`release_memory`: freed memory handed back to the operating system
  (:meth:`~kieval_app.serving.store.Store.trim`).

The command line's one-shot runs choose their own Arrow pool (``kieval_core.cli``), and the
readers pause the cycle collector while they build (:mod:`kieval_core.gcpause`): both are
the core's, for every caller.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
from collections.abc import Mapping

import pyarrow as pa

MIB = 2**20
#: How the server allocates memory, unless its environment says otherwise: everything on
#: glibc's malloc (Python's small objects, Arrow's buffers), in at most two arenas, so that
#: what a closed session held goes back to the system (:meth:`kieval_app.serving.store.Store.trim`).
#: Python's own allocator frees a 1 MiB arena only when every object in it is gone, and the
#: few objects that outlive a large read keep hundreds of arenas: after 8 uploads at once
#: the server stayed 140-300 MiB above its start; with these, at it (bench/README.md,
#: "Admission and release"). The price: reading an upload takes ~35% more CPU.
ALLOCATOR_ENV = {"PYTHONMALLOC": "malloc", "MALLOC_ARENA_MAX": "2", "ARROW_DEFAULT_MEMORY_POOL": "system"}
#: The server's GIL switch interval (Python's default is 5 ms). A session's script gives the
#: GIL up at every wait (a socket, Arrow, a lock) and, beside a read in another thread,
#: waited up to the switch interval each time to get it back: page switches during uploads
#: took 2.1-2.5 s; with 1 ms, 0.93 s (bench/README.md).
SWITCH_INTERVAL_S = 0.001
#: Default byte budget of entries no session holds (``KIEVAL_IDLE_CACHE_MB`` overrides).
IDLE_BYTES = 64 * MIB
#: Seconds after which the next full collection scans everything again.
THAW_EVERY_S = 60.0


def idle_bytes(environ: Mapping[str, str] = os.environ) -> int:
    """The store's idle budget: ``KIEVAL_IDLE_CACHE_MB`` MiB, else :data:`IDLE_BYTES`.

    >>> idle_bytes({"KIEVAL_IDLE_CACHE_MB": "8"}) == 8 * MIB, idle_bytes({}) == IDLE_BYTES
    (True, True)
    """
    return int(environ.get("KIEVAL_IDLE_CACHE_MB", IDLE_BYTES // MIB)) * MIB


def release_memory() -> None:
    """Collect garbage and give freed memory back to the operating system: the C heap's
    (glibc keeps it otherwise) and Arrow's memory pool's (mimalloc keeps freed pages for
    reuse otherwise; the values of every dataset are Arrow text)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    pa.default_memory_pool().release_unused()
