"""Outputs that are whole or absent (SPEC 8b).

Every file the tool writes is first written under a temporary name beside its
destination and renamed into place (:class:`StagedFile`); a directory (a saved run) is
built beside its destination and swapped in (:func:`replace_directory`), so an
interrupted write leaves the earlier output as it was. A lock file beside a directory
(:class:`DirectoryLock`) keeps two writers from reporting success for the same place.
SIGINT and SIGTERM become :class:`Interrupted` (:func:`stop_on_signals`), which unwinds
the writes, and can be held back while outputs are renamed into place
(:func:`signals_deferred`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ..exceptions import KievalOptionError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: saves are not locked
    fcntl = None  # type: ignore[assignment]

TEMP_MARK = ".kieval-"


def _temp_prefix(destination: Path) -> str:
    return f".{destination.name}{TEMP_MARK}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_file_destination(path: Path, option: str) -> None:
    """Refuse a destination that can never be written, before any work is done."""
    if path.is_dir():
        msg = f"{option} {path}: is a directory; give a file name"
        raise KievalOptionError(msg)
    parent = path.parent
    if not parent.is_dir():
        msg = f"{option} {path}: the folder {parent} does not exist"
        raise KievalOptionError(msg)


class StagedFile:
    """A file written under a temporary name beside ``destination`` (created now, so a
    folder that cannot be written is found before the work starts) and renamed into
    place by :meth:`commit`; :meth:`discard` removes it.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> staged = StagedFile(folder / "r.json", "--json")
    >>> _ = staged.path.write_text("{}"); (folder / "r.json").exists()
    False
    >>> staged.commit(); (folder / "r.json").read_text()
    '{}'
    """

    def __init__(self, destination: Path, option: str) -> None:
        destination = Path(destination)
        check_file_destination(destination, option)
        try:
            fd, name = tempfile.mkstemp(prefix=_temp_prefix(destination), suffix=".tmp",
                                        dir=destination.parent)
        except OSError as exc:
            msg = f"{option} {destination}: cannot be written ({exc.strerror})"
            raise KievalOptionError(msg) from None
        os.close(fd)
        self.destination = destination
        self.path = Path(name)
        os.chmod(self.path, 0o666 & ~_umask())  # mkstemp makes it private; the output is not

    def commit(self) -> None:
        os.replace(self.path, self.destination)

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class OutputSet:
    """Several staged outputs (:class:`StagedFile`, :class:`kieval_core.output.runs.RunStage`)
    put in place together by :meth:`commit`, with SIGINT/SIGTERM held back meanwhile;
    leaving the block without committing discards every one of them."""

    def __init__(self) -> None:
        self.items: list = []

    def add(self, make):
        """Stage the output ``make()`` creates (a signal cannot fall between its creation
        and its registration, which would leave it behind)."""
        with signals_deferred():
            item = make()
            self.items.append(item)
        return item

    def commit(self) -> None:
        with signals_deferred():
            for item in self.items:
                item.commit()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc) -> None:
        for item in self.items:
            item.discard()


def write_text(path: str | Path, text: str) -> None:
    """Write a text file whole or not at all (a temporary file renamed into place)."""
    staged = StagedFile(Path(path), "output")
    try:
        staged.path.write_text(text, "utf-8")
        staged.commit()
    finally:
        staged.discard()


class DirectoryLock:
    """An exclusive lock on a directory that is about to be replaced, held in the lock
    file ``.<name>.lock`` beside it (the directory itself is swapped, so it cannot hold
    the lock). A second writer gets a :class:`KievalOptionError` at once.

    The lock file stays after release: removing it would let two later writers lock
    two different files.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory.parent / f".{directory.name}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            msg = f"{self.directory}: another kieval is writing a run here; try again when it has finished"
            raise KievalOptionError(msg) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file releases the lock
            self._fd = None


def staging_directory(destination: Path) -> Path:
    """A new empty directory beside ``destination`` to build its replacement in."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=_temp_prefix(destination), dir=destination.parent))
    os.chmod(path, 0o777 & ~_umask())  # mkdtemp makes it private; the run is not
    return path


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or the file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


def replace_directory(new: Path, destination: Path) -> None:
    """Put the directory ``new`` at ``destination``; the earlier directory there is
    removed once the new one is in place. Where the system can swap two paths in one
    step, ``destination`` is never missing, even for a moment."""
    if not destination.exists():
        os.rename(new, destination)
        return
    if _exchange(new, destination):
        shutil.rmtree(new)  # it now holds the earlier directory
        return
    old = Path(tempfile.mkdtemp(prefix=_temp_prefix(destination), dir=destination.parent))
    os.replace(destination, old)
    os.rename(new, destination)
    shutil.rmtree(old)


# --- signals -------------------------------------------------------------------------------


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, not an error of the input
    """SIGINT or SIGTERM arrived: unwind (outputs not yet in place are removed) and exit
    with ``128 + signum``. A BaseException, so no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    def __reduce__(self):
        """Pickled with its signal number (the message is its name, not an argument)."""
        return type(self), (self.signum,)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _Signals:
    """The process's SIGINT/SIGTERM state: raise :class:`Interrupted` once, or remember the
    signal while outputs are being renamed into place."""

    def __init__(self) -> None:
        self.deferring = 0
        self.pending: int | None = None
        self.raised = False

    def handle(self, signum: int, frame) -> None:
        if self.raised:  # a second signal while unwinding: the first one is being handled
            return
        if self.deferring:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise Interrupted(signum)


_STATE: _Signals | None = None
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread
    (the earlier handlers come back afterwards). Elsewhere than the main thread, nothing
    changes."""
    global _STATE
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state, outer = _Signals(), _STATE
    previous = {s: signal.signal(s, state.handle) for s in _SIGNALS}
    _STATE = state
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _STATE = outer


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back for the block (renaming outputs into place: all of them
    or none); a signal that arrived meanwhile is raised when it ends."""
    state = _STATE
    if state is None:
        yield
        return
    state.deferring += 1
    try:
        yield
    finally:
        state.deferring -= 1
        if not state.deferring and state.pending is not None and not state.raised:
            signum, state.pending = state.pending, None
            state.raised = True
            raise Interrupted(signum)
