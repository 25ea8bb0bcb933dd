"""Work on uploads in a child process the server can kill at once.

A read of a large file parses for seconds in pure Python, and a few KB can cost minutes
(page images of millions of pixels, a document of thousands of lines to match): in a
thread of the server such work holds the GIL against every other session's script (their
clicks wait), delays the server's answer to SIGTERM, and, once started, cannot be stopped
(a cancelled upload was read to the end). :func:`run_isolated` runs a function in a child
process instead and waits for it in short polls
(:data:`POLL_S`), calling ``tick()`` between them; whatever ends the wait early (``tick``
raising because the page's run was cancelled, the session ending, any exception) kills
the child on the way out, so its CPU and memory are freed within a poll. The result comes
back pickled through a pipe (our own process's objects, not user data), after whatever
progress the work told :func:`report` (given to the wait's ``progress``); an exception
raised in the child is raised in the parent with its type and message
(:class:`~kieval_core.KievalInputError` and its subclasses pickle with their parts); a
child that dies without an answer (the out-of-memory killer, a crash in a library) raises
:class:`ChildDied`.

Children start from a ``forkserver`` (never a plain fork of the threaded server) that has
imported the core's readers already (:data:`PRELOAD`), so one starts in milliseconds;
:func:`warm` starts that server ahead of the first read. A child that did its work and
stayed small waits for the next (up to :data:`SPARE` of them), so a small read costs
about what it costs in the server's thread; a child that was stopped, failed to answer or
grew past :data:`REUSE_BYTES` is ended. Children run at a lower CPU priority than the server
(:data:`NICE`). Nothing Streamlit here.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import resource
import signal
import threading
from collections.abc import Callable
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from multiprocessing.context import set_spawning_popen
from typing import Any

#: Seconds between two checks of a child (and two calls of ``tick``).
POLL_S = 0.25
#: Children kept, once their work is done, for the next work: a child's first read costs
#: about three times a later one (the pages it touches are copied from the fork server's,
#: one by one), so a spare child makes a small upload's read in a child cost about what it
#: costs in the server's thread (bench/README.md, "Every upload in a child").
SPARE = 2
#: A child whose peak resident memory went above this ends after its work instead of
#: waiting for more: its memory goes back to the system with it.
REUSE_BYTES = 256 * 2**20
#: How much nicer than the server a child runs: the uploads' reads and scorings take the CPU
#: that every session's clicks (the server's script runs and event loop) leave, rather than
#: a share of the two cores against them (bench/README.md, "Admission and release").
NICE = 10
#: Modules the fork server imports once, so that each child has them already (this one, to
#: run the child; the app's work run there, with the core's readers and scoring).
PRELOAD = ("kieval_app.serving.isolation", "kieval_app.compute")

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(list(PRELOAD))


class _Popen(popen_forkserver.Popen):
    """The fork server's launch (as the standard library's), but the child is not told to
    run the parent's main module: in a Streamlit server ``__main__`` is the page script of
    the latest run (Streamlit puts it there at every run), which the child would run again
    as it starts. The child needs only the module of the function it runs."""

    def _launch(self, process_obj) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        _parent_w = os.dup(w)  # the child's sentinel of this process
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(_CONTEXT.Process):
    @staticmethod
    def _Popen(process_obj):  # noqa: N802 - the standard library's name
        return _Popen(process_obj)


class ChildDied(RuntimeError):
    """The child process ended without an answer: killed (often by the system running out
    of memory) or crashed; the message says how it ended."""

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode
        super().__init__(f"its process ended unexpectedly ({_how(exitcode)})")

    def __reduce__(self):
        return type(self), (self.exitcode,)


def _how(exitcode: int | None) -> str:
    """How a process ended, in words.

    >>> _how(-9)
    'killed by SIGKILL, perhaps for lack of memory'
    >>> _how(3)
    'exit code 3'
    """
    if exitcode is None or exitcode >= 0:
        return f"exit code {exitcode}"
    name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else f"signal {-exitcode}"
    return f"killed by {name}" + (", perhaps for lack of memory" if name == "SIGKILL" else "")


def warm() -> None:
    """Start the fork server in the background (it imports :data:`PRELOAD`), so that the
    first read does not wait for it."""
    threading.Thread(target=forkserver.ensure_running, name="kieval-forkserver", daemon=True).start()


class _Child:
    """A child process and the parent's end of its two-way pipe."""

    def __init__(self) -> None:
        self.connection, theirs = _CONTEXT.Pipe(duplex=True)
        self.process = _Process(target=_entry, args=(theirs,), daemon=True, name="kieval-work")
        try:
            self.process.start()
        except BaseException:
            self.connection.close()
            raise
        finally:
            theirs.close()  # the child's end: EOF here once the child is gone

    def end(self) -> None:
        """Kill the child if it still runs, and reap it."""
        self.connection.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join()


_spare: list[_Child] = []  # children that finished small work, waiting for the next
_spare_lock = threading.Lock()


def _child() -> _Child:
    """A spare child that is still alive, else a new one."""
    with _spare_lock:
        while _spare:
            child = _spare.pop()
            if child.process.is_alive():
                return child
            child.end()
    return _Child()


def end_spares() -> None:
    """End the children waiting for work (their memory goes back to the system)."""
    with _spare_lock:
        spare = list(_spare)
        _spare.clear()
    for child in spare:
        child.end()


def _keep(child: _Child) -> None:
    """Keep ``child`` for the next work, up to :data:`SPARE` children; end the others."""
    with _spare_lock:
        if len(_spare) < SPARE:
            _spare.append(child)
            return
    child.end()


def run_isolated(function: Callable[..., Any], *args: Any, tick: Callable[[], None] | None = None,
                 progress: Callable[..., None] | None = None, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` computed in a child process (module docstring).

    ``function`` and the arguments are pickled to the child (a module-level function);
    ``tick()`` is called every :data:`POLL_S` while the child runs, and whatever it raises
    ends the wait and the child; what ``function`` tells :func:`report` in the child is
    given to ``progress`` here. Raises what ``function`` raised, or :class:`ChildDied`.
    """
    child = _child()
    kept = False
    try:
        try:
            child.connection.send((function, args, kwargs))
        except (BrokenPipeError, ConnectionResetError):  # a spare that died meanwhile
            child.end()
            child = _Child()
            child.connection.send((function, args, kwargs))
        while True:
            while not child.connection.poll(POLL_S):
                if tick is not None:
                    tick()
            try:
                message = child.connection.recv()
            except EOFError:  # ended without an answer
                child.process.join()
                raise ChildDied(child.process.exitcode) from None
            if message[0] != _PROGRESS:
                break
            if progress is not None:
                progress(*message[1])
            if tick is not None:
                tick()
        succeeded, value, reusable = message
        kept = reusable
    finally:
        if kept:
            _keep(child)
        else:
            child.end()
    if succeeded:
        return value
    raise value


_PROGRESS = "progress"  # the first item of a message that is not the answer
_parent = None  # in a child: its end of the pipe to the parent


def report(*values: Any) -> None:
    """In a child: give ``values`` to the ``progress`` of the :func:`run_isolated` waiting
    for its work (outside a child, nothing)."""
    if _parent is not None:
        _parent.send((_PROGRESS, values))


def _entry(connection) -> None:
    """A child's entry: below the server's priority (:data:`NICE`), then :func:`_serve`."""
    os.nice(NICE)
    _serve(connection)


def _serve(connection) -> None:
    """In the child: compute each piece of work received and send back ``(True, value,
    reusable)`` or ``(False, exception, reusable)``, after what it :func:`report` ed;
    ``reusable`` is False once the child has held more than :data:`REUSE_BYTES` (it then
    ends, its memory with it)."""
    global _parent
    _parent = connection
    while True:
        try:
            function, args, kwargs = connection.recv()
        except EOFError:  # the parent is gone, or ended this child
            return
        try:
            outcome = (True, function(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            outcome = (False, _portable(exc))
        reusable = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 <= REUSE_BYTES
        try:
            connection.send((*outcome, reusable))
        except (BrokenPipeError, ConnectionResetError):  # the parent stopped waiting
            return
        except Exception as exc:  # noqa: BLE001 - the value itself could not be pickled
            connection.send((False, _portable(exc), reusable))
        if not reusable:
            return


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it comes back from pickle as the same type with the same message, else a
    :class:`RuntimeError` that names both (an exception class whose ``__init__`` takes other
    arguments than it passes on cannot be rebuilt by pickle)."""
    try:
        back = pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to rebuild it
        back = None
    if type(back) is type(exc) and str(back) == str(exc):
        return exc
    return RuntimeError(f"{type(exc).__name__}: {exc}")
